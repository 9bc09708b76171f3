import type { FastifyBaseLogger } from 'fastify'
import { createThrottledLog } from '@auth-token-service/guard/shared/throttled-log'
import type { WebhookConfig } from '../config.js'
import type { Metrics } from '../metrics/metrics.js'
import { startDeliverer, type Deliverer } from './deliverer.js'
import type { WebhookOutbox } from './outbox.js'
import type { OutboxSignal } from './signal.js'
import { decodeWebhookSecret } from './signature.js'

/** Backoff stops doubling at an hour: a receiver back after a long outage waits at most that long. */
const MAX_BACKOFF_MS = 3_600_000

/** The delivery worker of this instance, wired to the audit log's doorbell, the log and the metrics. */
export function startWebhookDelivery (config: WebhookConfig, parts: { outbox: WebhookOutbox, signal: OutboxSignal, log: Pick<FastifyBaseLogger, 'warn'>, metrics: Pick<Metrics, 'webhookAttempt'> }): Deliverer {
  const decoded = decodeWebhookSecret(config.secret)
  // loadConfig refused any other; this is for a config built in code.
  if (!decoded.ok) throw new Error(`AUTH_WEBHOOK_SECRET ${decoded.problem}`)
  const throttled = createThrottledLog()
  const deliverer = startDeliverer({
    outbox: parts.outbox,
    urls: config.urls,
    key: decoded.key,
    timeoutMs: config.timeoutMs,
    backoffMs: config.backoffMs,
    maxBackoffMs: Math.max(config.backoffMs, MAX_BACKOFF_MS),
    retryWindowMs: config.retryWindowMs,
    pollMs: config.pollMs,
    onAttempt: parts.metrics.webhookAttempt,
    onError: (error) => {
      throttled('webhook-outbox', (repeats) => {
        parts.log.warn({ err: { message: error instanceof Error ? error.message : String(error) }, repeats }, 'webhook outbox unreachable: deliveries wait')
      })
    }
  })
  parts.signal.listen(deliverer.nudge)
  return {
    nudge: deliverer.nudge,
    async stop () {
      parts.signal.listen(undefined)
      await deliverer.stop()
    }
  }
}
