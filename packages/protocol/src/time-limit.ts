/**
 * `work`, or what `onTimeout` gives (or throws) once `ms` pass first. The timer is cleared
 * either way, so a settled race leaves nothing behind to keep the process alive.
 */
export async function withTimeout<T, U = never> (work: Promise<T>, ms: number, onTimeout: () => U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<U>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(onTimeout())
      } catch (error) {
        reject(error)
      }
    }, ms)
  })
  try {
    return await Promise.race([work, timeout])
  } finally {
    clearTimeout(timer)
  }
}
