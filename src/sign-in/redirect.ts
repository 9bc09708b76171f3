/**
 * Where a sign-in may send a person back to. An open redirect on a sign-in page is a phishing
 * tool (a link to the real sign-in that lands on a look-alike), so `rd` is refused unless it is
 * plainly an http(s) URL of the page's own origin or of an allowed host. Every check is made on
 * the raw text first (what a browser could read differently from the WHATWG parser: backslashes,
 * control characters, `//host`, `https:host`), then on the parsed URL (userinfo, host), and the
 * Location sent is the parsed URL's own serialization, never the text as given.
 */

/** Longer than any URL a gateway builds from a real navigation; anything beyond is refused. */
const MAX_REDIRECT_LENGTH = 2048

/** Printable ASCII only: no whitespace, no controls (tab and newline are dropped by URL parsers), no Unicode look-alikes. */
const PRINTABLE_ASCII = /^[\x21-\x7e]+$/

/** An absolute http(s) URL with an authority, or a path of the page's own origin (not `//`). */
const ABSOLUTE_HTTP = /^https?:\/\/[^/]/i
const OWN_PATH = /^\/(?![/])/

/** Whether `host` (lowercase, no port) is one AUTH_REDIRECT_ALLOWED admits: `app.example.org`, or `.example.org` for it and its subdomains. */
export function hostAllowed (host: string, allowed: readonly string[]): boolean {
  return allowed.some((rule) => rule.startsWith('.')
    ? host === rule.slice(1) || host.endsWith(rule)
    : host === rule)
}

/**
 * The URL to send the person to, or undefined when `rd` must be ignored. `ownOrigin` is the
 * sign-in page's origin as the browser sees it (`http://host:port`); a path is resolved on it.
 */
export function safeRedirect (rd: string | undefined, ownOrigin: string | undefined, allowed: readonly string[]): string | undefined {
  if (rd === undefined || rd === '' || rd.length > MAX_REDIRECT_LENGTH) return undefined
  if (!PRINTABLE_ASCII.test(rd) || rd.includes('\\')) return undefined
  const ownPath = OWN_PATH.test(rd)
  if (!ownPath && !ABSOLUTE_HTTP.test(rd)) return undefined
  if (ownPath && ownOrigin === undefined) return undefined
  let url: URL
  try {
    url = new URL(rd, ownOrigin)
  } catch {
    return undefined
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined
  if (url.username !== '' || url.password !== '') return undefined
  if (url.origin === ownOrigin) return url.href
  // Only the own origin is reached by a path; an absolute URL elsewhere needs an allowed host.
  if (ownPath) return undefined
  const host = url.hostname.toLowerCase()
  return hostAllowed(host, allowed) ? url.href : undefined
}

/**
 * `rd` from a raw query string. Gateways cannot percent-encode (nginx has no such function), so
 * `/auth/signin?rd=$scheme://$http_host$request_uri` arrives with the original query's `&`
 * unencoded: a query that begins with `rd=` followed by an http(s) URL or a path takes the rest
 * of the query as it is. Otherwise `rd` is an ordinary, percent-encoded parameter.
 */
export function redirectParameter (rawUrl: string): string | undefined {
  const mark = rawUrl.indexOf('?')
  if (mark < 0) return undefined
  const query = rawUrl.slice(mark + 1)
  if (query.startsWith('rd=')) {
    const rest = query.slice(3)
    if (/^https?:\/\//i.test(rest) || rest.startsWith('/')) return rest
  }
  for (const pair of query.split('&')) {
    if (!pair.startsWith('rd=')) continue
    try {
      return decodeURIComponent(pair.slice(3).replace(/\+/g, ' '))
    } catch {
      return undefined
    }
  }
  return undefined
}
