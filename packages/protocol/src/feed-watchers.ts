import { FEED_PROOF_MS, type RevocationWatcher } from './feed.js'

/** The watchers of one feed, told together: the part every kind of feed shares. */
export interface FeedWatchers {
  readonly live: boolean
  /** Subscribed (proven for FEED_PROOF_MS) or cut: told to every watcher on a change. */
  setLive (next: boolean): void
  /** A heartbeat came back: every watcher trusts the feed for `validForMs` more. */
  prove (validForMs: number): void
  /** A message on the revocation channel: space-separated token hashes. */
  deliver (message: string): void
  /** Adds a watcher (told at once when the feed is already live); returns its removal. */
  add (watcher: RevocationWatcher): () => void
  clear (): void
}

export function createFeedWatchers (): FeedWatchers {
  const watchers = new Set<RevocationWatcher>()
  let live = false
  return {
    get live () { return live },
    setLive (next) {
      if (live === next) return
      live = next
      for (const watcher of watchers) {
        if (next) watcher.live(FEED_PROOF_MS)
        else watcher.interrupted()
      }
    },
    prove (validForMs) {
      if (!live || validForMs <= 0) return
      for (const watcher of watchers) watcher.live(validForMs)
    },
    deliver (message) {
      if (message === '') return
      const hashes = message.split(' ')
      for (const watcher of watchers) watcher.revoked(hashes)
    },
    add (watcher) {
      watchers.add(watcher)
      // Live, not yet proven for this watcher: the next heartbeat proves it.
      if (live) watcher.live(0)
      return () => { watchers.delete(watcher) }
    },
    clear () {
      watchers.clear()
      live = false
    }
  }
}
