import type { FastifyBaseLogger } from 'fastify'
import { createThrottledLog } from '@auth-token-service/protocol/throttled-log'
import type { WebhookConfig } from '../config/parts/webhooks.js'
import type { Metrics } from '../metrics/metrics.js'
import { startDeliverer, type Deliverer } from './deliverer.js'
import type { WebhookOutbox } from './outbox.js'
import type { OutboxSignal } from './signal.js'

/** Backoff stops doubling at an hour: a receiver back after a long outage waits at most that long. */
const MAX_BACKOFF_MS = 3_600_000

/** A receiver as the log names it: its origin, never its path or query. */
function receiverOrigin (url: string): string {
  try {
    return new URL(url).origin
  } catch {
    return '(not a URL)'
  }
}

/** The delivery worker of this instance, wired to the audit log's doorbell, the log and the metrics. */
export function startWebhookDelivery (config: WebhookConfig, parts: { outbox: WebhookOutbox, signal: OutboxSignal, log: Pick<FastifyBaseLogger, 'info' | 'warn'>, metrics: Pick<Metrics, 'webhookAttempt'> }): Deliverer {
  const throttled = createThrottledLog()
  const deliverer = startDeliverer({
    outbox: parts.outbox,
    urls: config.urls,
    key: config.key,
    timeoutMs: config.timeoutMs,
    backoffMs: config.backoffMs,
    maxBackoffMs: Math.max(config.backoffMs, MAX_BACKOFF_MS),
    retryWindowMs: config.retryWindowMs,
    pollMs: config.pollMs,
    onAttempt: parts.metrics.webhookAttempt,
    // A receiver that is down shows in the log (at most a line or two per receiver per 10 s), not only in
    // auth_webhook_attempts_total; by its origin alone: a URL's path or query may hold a receiver's token.
    onUndelivered: (url, problem, status) => {
      const receiver = receiverOrigin(url)
      // Giving up has a key of its own: a retry's line within the interval must not hold it back.
      throttled(`webhook-${status === 'failed' ? 'given-up' : 'retry'} ${receiver}`, (repeats) => {
        parts.log.warn({ receiver, problem, repeats }, status === 'failed' ? 'webhook delivery given up after the retry window (GET /admin/webhooks/deliveries?status=failed)' : 'webhook delivery failed: retried with backoff')
      })
    },
    onError: (error) => {
      throttled('webhook-outbox', (repeats) => {
        parts.log.warn({ err: { message: error instanceof Error ? error.message : String(error) }, repeats }, 'webhook outbox unreachable: deliveries wait')
      })
    }
  })
  parts.signal.listen(deliverer.nudge)
  parts.log.info({ receivers: config.urls.map(receiverOrigin) }, 'webhooks: lifecycle events are delivered, signed, to these receivers')
  return {
    nudge: deliverer.nudge,
    async stop () {
      parts.signal.listen(undefined)
      await deliverer.stop()
    }
  }
}
