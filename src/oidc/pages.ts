import { errors, type ErrorOut, type KoaContextWithOIDC } from 'oidc-provider'
import { brandFor, continuePage, messagePage, pageHeaders } from '../sign-in/index.js'

/**
 * The provider's pages, in the sign-in pages' frame and under their headers (the strict CSP, no
 * framing, no cache).
 *
 * The error page: what a browser sees when the provider cannot send it back to the application: a
 * redirect_uri that is not one the client registered (sending the browser there would hand the
 * code, or the error, to whoever named it), an unknown client, a request it cannot read, an
 * interaction that expired. The sign-in page's frame and headers (its strict CSP, no framing),
 * the trouble said in words; the error code and the provider's own description for whoever runs
 * the application. Nothing of the request is echoed (not the redirect_uri, not the state), and
 * everything shown is escaped by the pages' template.
 */

export interface ProviderPageSettings {
  /** AUTH_SIGNIN_TITLE. */
  title: string | undefined
  /** AUTH_REDIRECT_ALLOWED: the sign-in pages' form-action, kept the same here. */
  redirectAllowed: readonly string[]
}

export interface Page {
  status: number
  headers: Readonly<Record<string, string>>
  body: string
}

export interface ProviderPages {
  /** The page for an error (oidc-provider's `out`: its code and description). */
  error (hostname: string, out: Pick<ErrorOut, 'error' | 'error_description'>, error: unknown, status: number): Page
  /**
   * After a sign-in, on to the provider (`href`: the interaction's return address), which sends
   * the browser to the client. Not a redirect: the sign-in form's answer is held to its CSP's
   * form-action along every redirect after it (Chromium), and the client's origin is not in it.
   */
  continuing (hostname: string, href: string): Page
}

const EXPIRED = 'This sign-in has expired or was already used. Go back to the application and sign in from there again.'

/** What went wrong, for the person in front of the page. */
export function errorWords (code: string, error: unknown): { title: string, text: string } {
  if (error instanceof errors.SessionNotFound) return { title: 'Sign-in expired', text: EXPIRED }
  switch (code) {
    case 'invalid_redirect_uri':
      return { title: 'Sign-in stopped', text: 'The application asked to send you back to an address it has not registered with this service, so you were not sent there. Tell the people who run the application.' }
    case 'invalid_client':
    case 'unauthorized_client':
      return { title: 'Unknown application', text: 'The application that sent you here is not registered with this service, or not for this kind of sign-in. Tell the people who run the application.' }
    case 'server_error':
    case 'temporarily_unavailable':
      return { title: 'Sign-in unavailable', text: 'Sign-in is unavailable right now. Try again in a moment.' }
    case 'access_denied':
      return { title: 'Sign-in refused', text: 'This sign-in was refused.' }
    default:
      return { title: 'Sign-in stopped', text: 'The application\'s sign-in request could not be completed. Tell the people who run the application.' }
  }
}

export function createProviderPages (settings: ProviderPageSettings): ProviderPages {
  const headers = { ...pageHeaders(settings.redirectAllowed), 'cache-control': 'no-store' }
  return {
    error (hostname, out, error, status) {
      const { title, text } = errorWords(out.error, error)
      // The provider's description is its own fixed text, never a value of the request's; a server error's says nothing.
      const detail = out.error_description === undefined || out.error === 'server_error' ? out.error : `${out.error}: ${out.error_description}`
      return { status, headers, body: messagePage({ brand: brandFor(settings.title, hostname), title, text, detail }) }
    },
    continuing (hostname, href) {
      return { status: 200, headers, body: continuePage({ brand: brandFor(settings.title, hostname), title: 'Signed in', text: 'Taking you back to the application…', href }) }
    }
  }
}

/** oidc-provider's `renderError`: the error page above, in place of its own. */
export function providerErrorPage (pages: Pick<ProviderPages, 'error'>): (ctx: KoaContextWithOIDC, out: ErrorOut, error: unknown) => Promise<void> {
  return async (ctx, out, error) => {
    const page = pages.error(ctx.hostname, out, error, ctx.status)
    ctx.status = page.status
    ctx.set({ ...page.headers })
    ctx.body = page.body
  }
}
