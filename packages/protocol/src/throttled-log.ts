/**
 * Logs a thing that can repeat thousands of times a second (a backend down, a full queue) at
 * most once per `intervalMs` for each key, and counts the rest.
 *
 * The first occurrence is written at once. Those that follow within the interval are not,
 * except the last of them, which is written when the interval ends; so a burst gives at most
 * two lines per interval and no count is lost. `write` is given `repeats`: how many
 * occurrences before this one had no line of their own since the previous line of the key.
 */
export type ThrottledLog = (key: string, write: (repeats: number) => void) => void

interface KeyState {
  lastWritten: number
  /** Occurrences that got no line (the held one not included). */
  repeats: number
  /** The latest occurrence, held to be written when the interval ends. */
  held: ((repeats: number) => void) | undefined
  timer: NodeJS.Timeout | undefined
}

export const LOG_THROTTLE_MS = 10_000

export function createThrottledLog (intervalMs = LOG_THROTTLE_MS): ThrottledLog {
  const keys = new Map<string, KeyState>()

  const writeHeld = (state: KeyState): void => {
    state.timer = undefined
    const held = state.held
    if (held === undefined) return
    const repeats = state.repeats
    state.held = undefined
    state.repeats = 0
    state.lastWritten = Date.now()
    held(repeats)
  }

  return (key, write) => {
    const now = Date.now()
    const state = keys.get(key)
    if (state === undefined) {
      keys.set(key, { lastWritten: now, repeats: 0, held: undefined, timer: undefined })
      write(0)
      return
    }
    if (now - state.lastWritten >= intervalMs) {
      // The interval is over (and its timer not yet run): what it held is one more repeat.
      const repeats = state.repeats + (state.held === undefined ? 0 : 1)
      if (state.timer !== undefined) clearTimeout(state.timer)
      Object.assign(state, { lastWritten: now, repeats: 0, held: undefined, timer: undefined })
      write(repeats)
      return
    }
    if (state.held !== undefined) state.repeats++
    state.held = write
    // Unref'd: a held line never keeps the process alive.
    state.timer ??= setTimeout(() => { writeHeld(state) }, state.lastWritten + intervalMs - now).unref()
  }
}
