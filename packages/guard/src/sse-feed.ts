import type { FetchFunction } from './client/wire.js'
import { FEED_PROOF_MS, type RevocationWatcher } from '@auth-token-service/protocol/feed'

/**
 * The HTTP mode's revocation feed: a client of the service's `GET /auth/revocations`
 * server-sent event stream, over fetch. `ready` makes the feed live, and each `heartbeat`
 * renews the proof that it is (for as long as the event says); each `revoked`
 * event carries space-separated token hashes; the end of the stream, an error, or
 * silence longer than `idleTimeoutMs` (a half-open connection looks exactly like a
 * quiet one) makes it interrupted, and it reconnects with a capped, jittered backoff.
 */

export interface ServerSentEvent {
  type: string
  data: string
}

export interface EventStreamParser {
  push (text: string): void
  /** The stream ended: an event not closed by a blank line is dropped (as the spec says). */
  end (): void
}

/**
 * The text/event-stream line format (WHATWG HTML §9.2.6): lines end in CRLF, LF or CR;
 * `field: value` with one optional space after the colon; lines starting with `:`
 * are comments (heartbeats); a blank line dispatches the event.
 */
export function createEventStreamParser (onEvent: (event: ServerSentEvent) => void): EventStreamParser {
  let buffer = ''
  let type = ''
  let data: string[] = []

  const line = (text: string): void => {
    if (text === '') {
      if (data.length > 0 || type !== '') onEvent({ type: type === '' ? 'message' : type, data: data.join('\n') })
      type = ''
      data = []
      return
    }
    if (text.startsWith(':')) return
    const colon = text.indexOf(':')
    const field = colon < 0 ? text : text.slice(0, colon)
    let value = colon < 0 ? '' : text.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'event') type = value
    else if (field === 'data') data.push(value)
  }

  return {
    push (text) {
      buffer += text
      let start = 0
      for (;;) {
        const cr = buffer.indexOf('\r', start)
        const lf = buffer.indexOf('\n', start)
        if (cr < 0 && lf < 0) break
        const at = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf)
        // A CR at the very end may be the first half of a CRLF split across chunks.
        if (at === cr && at === buffer.length - 1) break
        line(buffer.slice(start, at))
        start = at + (at === cr && buffer[at + 1] === '\n' ? 2 : 1)
      }
      buffer = buffer.slice(start)
    },
    end () {
      if (buffer.endsWith('\r')) line(buffer.slice(0, -1))
      buffer = ''
      type = ''
      data = []
    }
  }
}

export interface RevocationFeedOptions {
  url: string | URL
  /** The service's AUTH_REVOCATIONS_KEY, sent as `Authorization: Bearer`. */
  key?: string | undefined
  fetch?: FetchFunction
  /** First reconnection delay, doubled on each failure up to `maxBackoffMs`. */
  minBackoffMs?: number
  maxBackoffMs?: number
  /**
   * No byte for this long: the stream is presumed dead and made again. (Trust in the cache
   * lapses far sooner, with the heartbeats: shared/feed.ts.) Services before
   * heartbeat events sent a comment every 15 s.
   */
  idleTimeoutMs?: number
  /** Told of each failed connection or cut stream (for a throttled log line). */
  onError?: (error: unknown) => void
}

export interface RevocationFeedHandle {
  close (): Promise<void>
}

export function followRevocations (options: RevocationFeedOptions, watcher: RevocationWatcher): RevocationFeedHandle {
  const fetchFunction = options.fetch ?? globalThis.fetch
  const minBackoffMs = options.minBackoffMs ?? 100
  const maxBackoffMs = options.maxBackoffMs ?? 5000
  const idleTimeoutMs = options.idleTimeoutMs ?? 20_000
  let closed = false
  let stopCurrent: ((reason: Error) => void) | undefined
  let wakeUp: (() => void) | undefined

  const pause = async (ms: number): Promise<void> => {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms)
      wakeUp = () => { clearTimeout(timer); resolve() }
    })
    wakeUp = undefined
  }

  /** One connection, until it ends; true when it got as far as `ready`. */
  async function follow (): Promise<boolean> {
    const controller = new AbortController()
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
    // Aborting the fetch does not always settle a pending body read (nodejs/node#56917,
    // nodejs/undici#4089); cancelling the reader always does.
    const stop = (reason: Error): void => {
      controller.abort(reason)
      reader?.cancel(reason).catch(() => {})
    }
    stopCurrent = stop
    let idle: NodeJS.Timeout | undefined
    const touch = (): void => {
      clearTimeout(idle)
      idle = setTimeout(() => { stop(new Error('revocation feed idle')) }, idleTimeoutMs)
    }
    let live = false
    try {
      touch()
      const response = await fetchFunction(options.url, {
        headers: { accept: 'text/event-stream', 'cache-control': 'no-store', ...(options.key === undefined ? {} : { authorization: `Bearer ${options.key}` }) },
        redirect: 'error',
        signal: controller.signal
      })
      if (response.status !== 200 || response.body === null) {
        response.body?.cancel().catch(() => {})
        throw new Error(`revocation feed answered HTTP ${response.status}`)
      }
      const parser = createEventStreamParser((event) => {
        if (event.type === 'ready' && !live) {
          live = true
          watcher.live(FEED_PROOF_MS)
        } else if (event.type === 'heartbeat' && live) {
          // The service's own proof, passed on (shared/feed.ts): trusted no longer than it says.
          const remaining = Number(event.data)
          if (Number.isFinite(remaining) && remaining > 0) watcher.live(Math.min(remaining, FEED_PROOF_MS))
        } else if (event.type === 'revoked' && live) {
          const hashes = event.data.split(' ').filter((hash) => hash !== '')
          if (hashes.length > 0) watcher.revoked(hashes)
        }
      })
      reader = response.body.getReader()
      if (controller.signal.aborted) throw new Error('revocation feed stopped')
      const decoder = new TextDecoder()
      for (;;) {
        const chunk = await reader.read()
        if (chunk.done || controller.signal.aborted) break
        touch()
        parser.push(decoder.decode(chunk.value, { stream: true }))
      }
      parser.end()
      if (!closed) options.onError?.(new Error('revocation feed ended'))
    } catch (error) {
      if (!closed) options.onError?.(error)
    } finally {
      clearTimeout(idle)
      stop(new Error('revocation feed done'))
      if (live) watcher.interrupted()
    }
    return live
  }

  const running = (async () => {
    let failures = 0
    while (!closed) {
      failures = await follow() ? 0 : failures + 1
      if (closed) break
      const ceiling = Math.min(maxBackoffMs, minBackoffMs * 2 ** Math.min(failures, 20))
      // Jitter: guards cut off together do not all come back in the same millisecond.
      await pause(ceiling / 2 + Math.random() * ceiling / 2)
    }
  })()

  return {
    async close () {
      closed = true
      stopCurrent?.(new Error('revocation feed closed'))
      wakeUp?.()
      await running
    }
  }
}
