import { html } from '../sign-in/index.js'
import type { LinkKind } from './store.js'

/** The mail a person gets: a text and an HTML body saying the same, the link in both. */

export interface MailMessage {
  subject: string
  text: string
  html: string
}

export interface MessageParts {
  kind: LinkKind
  /** Whose accounts these are (AUTH_SIGNIN_TITLE, else the public URL's host). */
  brand: string
  username: string
  link: string
  expiresAt: Date
  now: number
}

/** "30 minutes", "7 days": how long a link works, from when the mail goes out. */
export function validity (expiresAt: Date, now: number): string {
  const minutes = Math.max(1, Math.round((expiresAt.getTime() - now) / 60_000))
  if (minutes < 120) return minutes === 1 ? '1 minute' : `${minutes} minutes`
  const hours = Math.round(minutes / 60)
  if (hours < 48) return `${hours} hours`
  return `${Math.round(hours / 24)} days`
}

export function renderMessage ({ kind, brand, username, link, expiresAt, now }: MessageParts): MailMessage {
  const lasts = validity(expiresAt, now)
  const invite = kind === 'invite'
  const subject = invite ? `Your ${brand} account: set your password` : `Reset your ${brand} password`
  const lead = invite
    ? `An account named ${username} was made for you at ${brand}. Open this link to choose its password:`
    : `Someone (we hope you) asked to reset the password of the account ${username} at ${brand}. Open this link to choose a new one:`
  const after = invite
    ? `The link works for ${lasts}, once. Then sign in with your username and the new password.`
    : `The link works for ${lasts}, once. Setting a new password signs the account out everywhere. If you did not ask for this, ignore this mail: your password stays as it is.`
  const text = `${lead}\n\n${link}\n\n${after}\n`
  const body = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${subject}</title></head>
<body style="font-family: system-ui, sans-serif; line-height: 1.5; color: #1f2933;">
<p>${lead}</p>
<p><a href="${link}" style="display: inline-block; padding: 0.6em 1.2em; background: #2f5bd3; color: #ffffff; text-decoration: none; border-radius: 6px;">${invite ? 'Set your password' : 'Choose a new password'}</a></p>
<p style="font-size: 0.9em; color: #52606d;">Or copy this address into your browser: ${link}</p>
<p>${after}</p>
</body></html>
`.html
  return { subject, text, html: body }
}
