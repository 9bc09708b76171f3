/**
 * A browser's cookies, by name, as the tests and the benchmark keep them while they follow a
 * sign-in by fetch (paths ignored: one more cookie sent harms nothing there). A cookie set empty
 * or expired in 1970 is forgotten, as a browser forgets it.
 */
export class Jar {
  readonly cookies = new Map<string, string>()

  take (response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';')
      const equals = pair.indexOf('=')
      const name = pair.slice(0, equals).trim()
      const value = pair.slice(equals + 1).trim()
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  header (): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }
}

/** An attribute value with the service's HTML escapes (`&#NN;`) undone. */
export const unescaped = (value: string): string => value.replace(/&#(\d+);/g, (_all, code: string) => String.fromCharCode(Number(code)))

/**
 * Where a page's refresh sends the browser on (the OpenID Connect provider's continue page after a
 * sign-in: src/oidc/pages.ts), or null: a browser follows it as it follows a redirect.
 */
export function refreshTarget (body: string): string | null {
  const found = /<meta http-equiv="refresh" content="0;url=([^"]*)">/.exec(body)
  return found?.[1] === undefined ? null : unescaped(found[1])
}
