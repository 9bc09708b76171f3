import type { FastifyBaseLogger } from 'fastify'
import { createThrottledLog } from '@auth-token-service/protocol/throttled-log'
import type { MailConfig } from '../config/parts/mail.js'
import type { TotpKeys } from '../totp/index.js'
import { createMailer } from './mailer.js'
import type { MailOutbox } from './store.js'
import { startMailWorker, type MailWorker } from './worker.js'

/** Backoff stops doubling at five minutes: a reset link lives half an hour. */
const MAX_BACKOFF_MS = 300_000

/** The brand a mail names: AUTH_SIGNIN_TITLE, else AUTH_PUBLIC_URL's host. */
export function mailBrand (config: Pick<MailConfig, 'publicUrl'>, signinTitle: string | undefined): string {
  return signinTitle ?? new URL(config.publicUrl).hostname
}

/**
 * The mail worker of this instance, wired to the log. The log names the recipient's domain, never
 * the address (its local part names a person) and never the link.
 */
export function startMailDelivery (config: MailConfig, parts: { outbox: MailOutbox, keys: () => Promise<TotpKeys>, brand: string, log: Pick<FastifyBaseLogger, 'info' | 'warn'> }): MailWorker {
  const throttled = createThrottledLog()
  const smtp = new URL(config.smtpUrl)
  const worker = startMailWorker({
    outbox: parts.outbox,
    mailer: createMailer({ smtpUrl: config.smtpUrl, from: config.from, timeoutMs: config.timeoutMs }),
    keys: parts.keys,
    publicUrl: config.publicUrl,
    brand: parts.brand,
    timeoutMs: config.timeoutMs,
    backoffMs: config.backoffMs,
    maxBackoffMs: Math.max(config.backoffMs, MAX_BACKOFF_MS),
    pollMs: config.pollMs,
    onDelivered: (domain) => { parts.log.info({ domain }, 'recovery mail delivered') },
    onUndelivered: (problem, status, domain) => {
      throttled(`mail-${status}`, (repeats) => {
        parts.log.warn({ domain, problem, repeats }, status === 'failed'
          ? 'recovery mail given up: its link no longer works (GET /admin/mail/deliveries?status=failed)'
          : 'recovery mail not delivered: retried with backoff')
      })
    },
    onError: (error) => {
      throttled('mail-outbox', (repeats) => {
        parts.log.warn({ err: { message: error instanceof Error ? error.message : String(error) }, repeats }, 'mail outbox unreachable: mail waits')
      })
    }
  })
  // The server by its host and port alone: the URL may carry credentials.
  parts.log.info({ smtp: `${smtp.protocol}//${smtp.hostname}:${smtp.port === '' ? (smtp.protocol === 'smtps:' ? '465' : '587') : smtp.port}` }, 'mail: recovery and invitation mail goes out through this SMTP server')
  return worker
}
