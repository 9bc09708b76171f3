import { setTimeout as sleep } from 'node:timers/promises'
import { signWebhook } from './signature.js'
import { createPoster } from './post.js'
import type { ClaimedDelivery, DeliveryStatus, WebhookOutbox } from './outbox.js'

/**
 * The delivery worker: one loop per receiver URL, so a slow or dead receiver holds up only its
 * own rows, and none of it runs on a request's path (Login only writes the outbox row, with its
 * audit row). Each loop claims due rows (outbox.claim: several instances never send one row at
 * the same time), sends them signed, with a timeout, and records the outcome: delivered, or
 * tried again after a growing, jittered delay until the retry window has passed, then failed.
 */

export interface DelivererOptions {
  outbox: WebhookOutbox
  urls: readonly string[]
  /** The secret's bytes (decoded where the configuration is read: config/parts/webhooks.ts). */
  key: Buffer
  /** One request's limit, connection included. */
  timeoutMs: number
  /** The first retry's delay; each next one doubles, up to maxBackoffMs. */
  backoffMs: number
  maxBackoffMs: number
  /** How long a row is retried (from its creation or a manual retry) before it is marked failed. */
  retryWindowMs: number
  /** Idle loops look for due rows this often. */
  pollMs: number
  /** Rows one loop claims and sends at once. */
  batch?: number
  /** Told of every attempt's outcome (metrics). */
  onAttempt?: (outcome: 'delivered' | 'retry' | 'failed') => void
  /** An attempt that did not deliver: the receiver's URL and what went wrong (an HTTP status, a timeout, a connection error). */
  onUndelivered?: (url: string, problem: string, status: DeliveryStatus) => void
  /** Told when the outbox itself cannot be read or written (the loop waits and goes on). */
  onError?: (error: unknown) => void
  now?: () => number
  random?: () => number
}

export interface Deliverer {
  /** Wakes the loops now (an event was written), instead of at their next poll. */
  nudge (): void
  /** Stops claiming; waits for the attempts under way. */
  stop (): Promise<void>
}

/** The delay before attempt n + 1 after n failures: doubling from `base`, capped, between half and all of it (jitter). */
export function backoffDelay (failures: number, base: number, max: number, random: () => number = Math.random): number {
  const full = Math.min(max, base * 2 ** Math.min(failures - 1, 30))
  return Math.round(full / 2 + (full / 2) * random())
}

/** Delivered rows are kept this long (the admin list shows them), then removed. */
const KEEP_DELIVERED_MS = 7 * 86_400_000
const PRUNE_EVERY_MS = 3_600_000

export function startDeliverer (options: DelivererOptions): Deliverer {
  const { outbox, urls, key, timeoutMs, pollMs } = options
  const now = options.now ?? Date.now
  const random = options.random ?? Math.random
  const batch = options.batch ?? 64
  // A lease longer than any attempt: nobody else takes the row while this one may still be sending it.
  const leaseMs = timeoutMs + 30_000
  const stopping = new AbortController()
  let wake: Array<() => void> = []
  let lastPrune = 0
  const gatherMs = Math.min(pollMs, 50)
  let gathering: NodeJS.Timeout | undefined

  const idle = async (): Promise<void> => {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        wake = wake.filter((other) => other !== done)
        stopping.signal.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, pollMs)
      wake.push(done)
      stopping.signal.addEventListener('abort', done, { once: true })
    })
  }

  async function attempt (row: ClaimedDelivery, delivered: string[]): Promise<void> {
    let problem: string
    const timeout = AbortSignal.timeout(timeoutMs)
    try {
      const status = await poster.post(row.url, {
        'content-type': 'application/json',
        'user-agent': 'auth-token-service-webhooks',
        ...signWebhook(key, row.eventId, row.payload, now())
      }, row.payload, AbortSignal.any([timeout, stopping.signal]))
      // Stopping cuts an attempt short (the signal above) rather than holding the shutdown for a slow receiver.
      problem = status >= 200 && status < 300 ? '' : `HTTP ${status}`
    } catch (error) {
      if (stopping.signal.aborted) {
        // Due again at once for whichever instance runs next (this one's lease is given back).
        await outbox.attemptFailed(row.id, 'interrupted: the service stopped', 0, options.retryWindowMs).catch(() => {})
        return
      }
      problem = timeout.aborted ? `timeout after ${timeoutMs} ms` : error instanceof Error ? error.message : 'request failed'
    }
    if (problem === '') {
      // Recorded with the batch's others in one statement (loop below); an outbox that cannot
      // record it leaves the row leased, and it is sent again when the lease runs out (at least once).
      delivered.push(row.id)
      return
    }
    const status: DeliveryStatus = await outbox.attemptFailed(row.id, problem, backoffDelay(row.attempts, options.backoffMs, options.maxBackoffMs, random), options.retryWindowMs)
    options.onAttempt?.(status === 'failed' ? 'failed' : 'retry')
    options.onUndelivered?.(row.url, problem, status)
  }

  async function loop (url: string): Promise<void> {
    while (!stopping.signal.aborted) {
      let claimed = 0
      try {
        const rows = await outbox.claim(url, batch, leaseMs)
        claimed = rows.length
        const delivered: string[] = []
        // Every attempt settles before the next claim (and before stop() returns), failed ones too.
        for (const result of await Promise.allSettled(rows.map(async (row) => { await attempt(row, delivered) }))) {
          if (result.status === 'rejected') options.onError?.(result.reason)
        }
        if (delivered.length > 0) {
          await outbox.delivered(delivered)
          delivered.forEach(() => { options.onAttempt?.('delivered') })
        }
      } catch (error) {
        options.onError?.(error)
        await sleep(pollMs).catch(() => {})
      }
      if (claimed === 0) await idle()
    }
  }

  async function pruneLoop (): Promise<void> {
    while (!stopping.signal.aborted) {
      if (now() - lastPrune >= PRUNE_EVERY_MS) {
        lastPrune = now()
        await outbox.prune(KEEP_DELIVERED_MS).catch((error: unknown) => { options.onError?.(error) })
      }
      await sleep(Math.min(PRUNE_EVERY_MS, 60_000), undefined, { signal: stopping.signal }).catch(() => {})
    }
  }

  const poster = createPoster()
  const running = Promise.all([...urls.map(loop), pruneLoop()]).finally(() => { poster.close() })
  return {
    nudge () {
      // Coalesced: the events written within gatherMs go out in one claim, not one claim each.
      gathering ??= setTimeout(() => {
        gathering = undefined
        for (const done of [...wake]) done()
      }, gatherMs)
    },
    async stop () {
      clearTimeout(gathering)
      stopping.abort()
      await running
    }
  }
}
