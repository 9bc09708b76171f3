import { setTimeout as sleep } from 'node:timers/promises'
import type { TotpKeys } from '../totp/index.js'
import { openSecret } from '../totp/index.js'
import { mailProblem, type Mailer } from './mailer.js'
import { renderMessage } from './messages.js'
import type { ClaimedMail, MailOutbox, MailStatus } from './store.js'
import { linkUrl, sealingContext } from './links.js'

/**
 * The mail worker, the webhook worker's design (src/webhooks/deliverer.ts) for one SMTP server:
 * none of it runs on a request's path (a request only writes the outbox row). It claims due rows
 * (several instances never send one row at once), opens each link's sealed secret, renders the
 * message, sends it with a time limit, and records the outcome: delivered (the secret wiped), or
 * tried again after a growing, jittered delay while the link still works, then failed.
 */

export interface MailWorkerOptions {
  outbox: MailOutbox
  mailer: Mailer
  keys: () => Promise<TotpKeys>
  /** AUTH_PUBLIC_URL without its trailing slash. */
  publicUrl: string
  brand: string
  /** One attempt's limit, all of it. */
  timeoutMs: number
  backoffMs: number
  maxBackoffMs: number
  pollMs: number
  batch?: number
  /** An attempt that did not deliver: what went wrong (no address's local part) and what the row is now. */
  onUndelivered?: (problem: string, status: MailStatus, domain: string) => void
  onDelivered?: (domain: string) => void
  /** The outbox itself cannot be read or written (the loop waits and goes on). */
  onError?: (error: unknown) => void
  now?: () => number
  random?: () => number
}

export interface MailWorker {
  /** Wakes the loop now (a mail was queued), instead of at its next poll. */
  nudge (): void
  stop (): Promise<void>
}

/** The delay before attempt n + 1 after n failures: doubling from `base`, capped, between half and all of it. */
export function mailBackoff (failures: number, base: number, max: number, random: () => number = Math.random): number {
  const full = Math.min(max, base * 2 ** Math.min(failures - 1, 30))
  return Math.round(full / 2 + (full / 2) * random())
}

const KEEP_MS = 7 * 86_400_000
const PRUNE_EVERY_MS = 3_600_000

const domainOf = (address: string): string => address.slice(address.lastIndexOf('@') + 1)

export function startMailWorker (options: MailWorkerOptions): MailWorker {
  const { outbox, mailer, timeoutMs, pollMs } = options
  const now = options.now ?? Date.now
  const random = options.random ?? Math.random
  const batch = options.batch ?? 16
  const leaseMs = timeoutMs + 30_000
  const stopping = new AbortController()
  let wake: (() => void) | undefined
  let lastPrune = 0

  const idle = async (): Promise<void> => {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        wake = undefined
        stopping.signal.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, pollMs)
      wake = done
      stopping.signal.addEventListener('abort', done, { once: true })
    })
  }

  /** The send, or a rejection after timeoutMs or when the worker stops (the SMTP exchange is left to its own timeouts). */
  async function sendWithin (to: string, message: ReturnType<typeof renderMessage>): Promise<void> {
    const limit = AbortSignal.any([AbortSignal.timeout(timeoutMs), stopping.signal])
    await new Promise<void>((resolve, reject) => {
      const stop = (): void => { reject(new Error(stopping.signal.aborted ? 'interrupted: the service stopped' : `timeout after ${timeoutMs} ms`)) }
      limit.addEventListener('abort', stop, { once: true })
      mailer.send(to, message).then(resolve, reject).finally(() => { limit.removeEventListener('abort', stop) })
    })
  }

  async function attempt (row: ClaimedMail): Promise<void> {
    const domain = domainOf(row.recipient)
    if (!row.usable || row.sealedSecret === null) {
      await outbox.giveUp(row.id, 'the link was used, superseded or expired before the mail went out')
      options.onUndelivered?.('link no longer valid', 'failed', domain)
      return
    }
    const opened = openSecret(await options.keys(), row.sealedSecret, sealingContext(row.accountId))
    if (opened === undefined) {
      await outbox.giveUp(row.id, 'the sealing key (AUTH_TOTP_KEY) does not open the link')
      options.onUndelivered?.('sealing key does not open the link', 'failed', domain)
      return
    }
    const message = renderMessage({
      kind: row.kind,
      brand: options.brand,
      username: row.username,
      link: linkUrl(options.publicUrl, opened.secret.toString('utf8')),
      expiresAt: row.expiresAt,
      now: now()
    })
    try {
      await sendWithin(row.recipient, message)
    } catch (error) {
      if (stopping.signal.aborted) {
        await outbox.attemptFailed(row.id, 'interrupted: the service stopped', 0).catch(() => {})
        return
      }
      const problem = mailProblem(error)
      const status = await outbox.attemptFailed(row.id, problem, mailBackoff(row.attempts, options.backoffMs, options.maxBackoffMs, random))
      options.onUndelivered?.(problem, status, domain)
      return
    }
    await outbox.delivered(row.id)
    options.onDelivered?.(domain)
  }

  async function loop (): Promise<void> {
    while (!stopping.signal.aborted) {
      let claimed = 0
      try {
        const rows = await outbox.claim(batch, leaseMs)
        claimed = rows.length
        for (const result of await Promise.allSettled(rows.map(attempt))) {
          if (result.status === 'rejected') options.onError?.(result.reason)
        }
        if (now() - lastPrune >= PRUNE_EVERY_MS) {
          lastPrune = now()
          await outbox.prune(KEEP_MS)
        }
      } catch (error) {
        options.onError?.(error)
        await sleep(pollMs).catch(() => {})
      }
      if (claimed === 0) await idle()
    }
  }

  const running = loop().finally(() => { mailer.close() })
  return {
    nudge () { wake?.() },
    async stop () {
      stopping.abort()
      await running
    }
  }
}
