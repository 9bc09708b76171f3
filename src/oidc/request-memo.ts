/**
 * A read the provider's handling of one request makes more than once, made once in it: a refresh
 * reads the account for findAccount and again for the access token's record, and the sign-in link
 * of its session to check the refresh token and again to issue the access token under it (issue 45:
 * each a Postgres query or a Redis round trip). Keyed by the request (oidc-provider's Koa context,
 * `Provider.ctx`), so nothing outlives the request; outside one (the back-channel logout, the admin
 * API) every call reads. A failed read is forgotten (the next call reads again).
 *
 * What a later read in the same request would have added is checked where it matters anyway: the
 * access token's record is written by a script that refuses it when the account's epoch moved
 * (disabled, password changed, revoke-all) or the sign-in token it stands under is gone.
 */
export interface RequestMemo<T> {
  read: (id: string) => Promise<T>
  /** What the request now knows to be the value (a write made in it): later reads in it answer that. */
  set: (id: string, value: T) => void
}

export function requestMemo<T> (request: () => object | undefined, read: (id: string) => Promise<T>): RequestMemo<T> {
  const byRequest = new WeakMap<object, Map<string, Promise<T>>>()
  return {
    read (id) {
      const current = request()
      if (current === undefined) return read(id)
      let known = byRequest.get(current)
      if (known === undefined) {
        known = new Map()
        byRequest.set(current, known)
      }
      const found = known.get(id)
      if (found !== undefined) return found
      const reading = read(id)
      known.set(id, reading)
      reading.catch(() => { if (known.get(id) === reading) known.delete(id) })
      return reading
    },
    set (id, value) {
      const current = request()
      if (current !== undefined) byRequest.get(current)?.set(id, Promise.resolve(value))
    }
  }
}
