import { badRequest } from '../errors/status.js'
import { reasons, type ClientUriParameter } from '../errors/reasons.js'

/**
 * The URLs a client registers: where the provider sends a browser back (redirect_uris,
 * post_logout_redirect_uris) and where it posts logout tokens (backchannel_logout_uri). Each is an
 * absolute https URL; plain http only to a loopback host, where a developer's app or a
 * command-line client listens (RFC 8252 §7.3; nothing on the way can read it there). No fragment
 * (RFC 6749 §3.1.2; OpenID Connect Back-Channel Logout §2.2). A URL is kept exactly as given:
 * the provider compares a request's redirect_uri with it as a string, so what the operator
 * registers is what the client must send.
 */

export const CLIENT_URI_MAX_LENGTH = 2048
/** URLs of one kind a client may register: enough for every environment of an app, bounded for the table. */
export const CLIENT_URIS_MAX = 32

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]'])
/**
 * Visible ASCII only: the URL parser drops tabs, newlines and outer spaces silently, so a URL with
 * them would be stored as a string no client ever sends (non-ASCII goes percent-encoded or punycode).
 */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/

function isAllowedUri (value: string): boolean {
  if (value.length > CLIENT_URI_MAX_LENGTH || !VISIBLE_ASCII.test(value) || value.includes('#')) return false
  const url = URL.parse(value)
  if (url === null) return false
  if (url.protocol === 'https:') return url.hostname !== ''
  return url.protocol === 'http:' && LOOPBACK.has(url.hostname)
}

/** The URL as given, or a 400 naming the parameter and the rule (never the URL). */
export function checkedUri (value: string, parameter: ClientUriParameter): string {
  if (!isAllowedUri(value)) throw badRequest(reasons.clientUriNotValid(parameter, CLIENT_URI_MAX_LENGTH))
  return value
}

/** Each URL checked, repeats dropped (the first kept, in order); `required`: at least one. */
export function checkedUris (values: readonly string[], parameter: Exclude<ClientUriParameter, 'backchannel_logout_uri'>, required: boolean): string[] {
  if (required && values.length === 0) throw badRequest(reasons.redirectUriRequired())
  const unique = [...new Set(values.map((value) => checkedUri(value, parameter)))]
  if (unique.length > CLIENT_URIS_MAX) throw badRequest(reasons.tooManyClientUris(parameter, CLIENT_URIS_MAX))
  return unique
}
