import { serviceUnavailable, StatusError } from '../errors/status.js'

/**
 * Database work as the contract wants it: a domain error (StatusError) passes through, any
 * driver failure is reported to `onError` and becomes the 503 the caller fails closed on.
 * `translate` turns a driver error that means something (a unique violation) into its own error.
 */
export function databaseGuard (onError?: (error: unknown) => void, translate?: (error: unknown) => StatusError | undefined): <T>(work: () => Promise<T>) => Promise<T> {
  return async function guarded<T> (work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      if (error instanceof StatusError) throw error
      const meant = translate?.(error)
      if (meant !== undefined) throw meant
      onError?.(error)
      throw serviceUnavailable('database', error)
    }
  }
}
