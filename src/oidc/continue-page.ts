import type { FastifyReply } from 'fastify'

/**
 * The page a finished sign-in passes through on its way back to the client. The sign-in page's
 * Content-Security-Policy allows its forms to go to this origin and to the hosts
 * AUTH_REDIRECT_ALLOWED names, and browsers hold `form-action` for every redirect that follows a
 * form's POST: the sign-in's 303s lead here, the provider's on to the client's `redirect_uri`,
 * which is on no such list, so Chromium stops the navigation (net::ERR_ABORTED) with the person
 * signed in and the client never answered. This page ends the form's chain: its refresh is a
 * navigation of its own, which no `form-action` governs, and it works without JavaScript. Its
 * target is the provider's own resume URL on this origin, never a URL a request gave.
 *
 * Sent when the browser says (`Sec-Fetch-Site: same-origin`) that the chain began on one of this
 * origin's pages; a chain from a client (single sign-on: the person signed in already) has no
 * form in it and goes on by 303, as does anything that sends no such header (a script following
 * redirects). Browsers too old to send it (before Chrome 76, Firefox 90, Safari 16.4) get the 303s.
 */

const CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

function attribute (text: string): string {
  return text.replace(/[&<>"'`]/g, (char) => `&#${char.charCodeAt(0)};`)
}

export function continuePage (target: string): string {
  const url = attribute(target)
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="0;url=${url}"><title>Signing you in</title></head>
<body style="font-family: system-ui, sans-serif; margin: 3em auto; max-width: 28em">
<p>Signed in. <a href="${url}">Continue</a></p>
</body></html>`
}

/** Answers the page that moves the browser on to `target` (the provider's resume URL). */
export async function sendContinuePage (reply: FastifyReply, target: string): Promise<FastifyReply> {
  return await reply.code(200)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', CSP)
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .send(continuePage(target))
}
