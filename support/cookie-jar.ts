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
