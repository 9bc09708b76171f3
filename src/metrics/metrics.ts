import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import { createRequestMetrics } from './request-metrics.js'
import type { PasswordHasher } from '../passwords/hasher.js'
import type { AuditEvent, AuditLog } from '../core/stores/audit-log.js'

/**
 * Prometheus metrics of one instance: requests by route and status, login outcomes,
 * tokens issued and ended, the password-hash queue, backend errors, and Node's
 * defaults (event-loop lag among them). Nothing here knows Fastify.
 */
export interface Metrics {
  readonly registry: Registry
  /** Everything, in Prometheus' text format (the registry's metrics and the request metrics). */
  exposition (): Promise<string>
  observeRequest (route: string, method: string, status: number, seconds: number): void
  backendError (backend: 'redis' | 'postgres'): void
  /** The audit log, counted on the way through: login outcomes and token counts come from its events. */
  countEvents (audit: AuditLog): AuditLog
  /** The hasher, timed. */
  timeHashing (hasher: PasswordHasher): PasswordHasher
  /** One webhook attempt's outcome: delivered, to be retried, or given up (failed). */
  webhookAttempt (outcome: 'delivered' | 'retry' | 'failed'): void
}

export interface MetricSources {
  hashQueueDepth: () => number
  /** Running totals kept where the dropping happens, read at each scrape. */
  auditDropped: () => number
  logLinesDropped: () => number
  /** Live API keys expiring within 7 days (a Postgres count, at each scrape); absent: no gauge. */
  keysExpiringSoon?: () => Promise<number>
  /** Webhook deliveries waiting and given up (a Postgres count, at each scrape); absent: webhooks off, no gauge. */
  webhookDeliveries?: (() => Promise<{ pending: number, failed: number } | undefined>) | undefined
}

/** A counter that follows a running total kept elsewhere, brought up to it at each scrape. */
function totalCounter (registry: Registry, name: string, help: string, total: () => number): void {
  let counted = 0
  // eslint-disable-next-line no-new -- a metric registers itself; the registry holds it
  new Counter({
    name,
    help,
    registers: [registry],
    collect () {
      const now = total()
      if (now > counted) this.inc(now - counted)
      counted = Math.max(counted, now)
    }
  })
}

export function createMetrics (sources: MetricSources): Metrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })

  const requests = createRequestMetrics({
    counter: 'http_requests_total',
    counterHelp: 'HTTP requests by route, method and status',
    histogram: 'http_request_duration_seconds',
    histogramHelp: 'HTTP request latency by route, method and status'
  }, [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
  const logins = new Counter({ name: 'auth_logins_total', help: 'Login attempts by outcome (success, failed, locked, rate_limited, revoked: overtaken by a revocation of the account; second_factor_required: the right password without the code)', labelNames: ['outcome'] as const, registers: [registry] })
  const issued = new Counter({ name: 'auth_tokens_issued_total', help: 'Tokens issued (refreshes not included)', registers: [registry] })
  const refreshed = new Counter({ name: 'auth_tokens_refreshed_total', help: 'Tokens whose lifetime a Login reset', registers: [registry] })
  const terminated = new Counter({ name: 'auth_tokens_terminated_total', help: 'Tokens ended before their expiry (logout, revocation, disable, password change)', registers: [registry] })
  const backendErrors = new Counter({ name: 'auth_backend_errors_total', help: 'Errors talking to Redis or Postgres', labelNames: ['backend'] as const, registers: [registry] })
  const hashTime = new Histogram({
    name: 'auth_password_hash_duration_seconds',
    help: 'Time of argon2id hashes and verifies, queueing included',
    labelNames: ['operation'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry]
  })
  // eslint-disable-next-line no-new -- a metric registers itself; the registry holds it
  new Gauge({ name: 'auth_password_hash_queue_depth', help: 'argon2id operations running or waiting', registers: [registry], collect () { this.set(sources.hashQueueDepth()) } })
  const keysExpiringSoon = sources.keysExpiringSoon
  if (keysExpiringSoon !== undefined) {
    let last = 0
    // eslint-disable-next-line no-new -- a metric registers itself; the registry holds it
    new Gauge({
      name: 'auth_api_keys_expiring_soon',
      help: 'Live API keys that expire within 7 days (rotate them: docs/machine-credentials.md)',
      registers: [registry],
      // A database that cannot answer leaves the last value: the scrape still succeeds.
      async collect () {
        last = await keysExpiringSoon().catch(() => last)
        this.set(last)
      }
    })
  }
  const webhookDeliveries = sources.webhookDeliveries
  if (webhookDeliveries !== undefined) {
    let last = { pending: 0, failed: 0 }
    // eslint-disable-next-line no-new -- a metric registers itself; the registry holds it
    new Gauge({
      name: 'auth_webhook_deliveries',
      help: 'Webhook deliveries by status: pending (not yet taken by the receiver) and failed (given up after the retry window: docs/webhooks.md)',
      labelNames: ['status'] as const,
      registers: [registry],
      // A database that cannot answer leaves the last values: the scrape still succeeds.
      async collect () {
        last = await webhookDeliveries().then((counts) => counts ?? last, () => last)
        this.set({ status: 'pending' }, last.pending)
        this.set({ status: 'failed' }, last.failed)
      }
    })
  }
  const webhookAttempts = new Counter({ name: 'auth_webhook_attempts_total', help: 'Webhook delivery attempts by outcome (delivered, retry, failed: given up)', labelNames: ['outcome'] as const, registers: [registry] })
  totalCounter(registry, 'auth_audit_events_dropped_total', 'Audit events dropped (buffer full or database refused)', sources.auditDropped)
  totalCounter(registry, 'auth_log_lines_dropped_total', 'Log lines dropped because stdout took none while the log buffer was full (its reader slow or stopped), or refused them', sources.logLinesDropped)

  /** Why a Login was refused, as auth_logins_total names it (any other refusal is a limit's). */
  const REFUSALS: Readonly<Record<string, string>> = { 'account-locked': 'locked', 'revoked-during-login': 'revoked', 'second-factor-required': 'second_factor_required' }
  const countEvent = (event: AuditEvent): void => {
    switch (event.event) {
      case 'login.success':
        logins.inc({ outcome: 'success' })
        if (event.outcome === 'refreshed') refreshed.inc()
        else issued.inc()
        break
      case 'login.failure':
        logins.inc({ outcome: 'failed' })
        break
      case 'login.refused':
        logins.inc({ outcome: REFUSALS[event.outcome] ?? 'rate_limited' })
        break
      default:
        if (event.tokensEnded !== undefined && event.tokensEnded > 0) terminated.inc(event.tokensEnded)
    }
  }

  const timed = async <T>(operation: string, work: () => Promise<T>): Promise<T> => {
    const stop = hashTime.startTimer({ operation })
    try {
      return await work()
    } finally {
      stop()
    }
  }

  return {
    registry,
    observeRequest: requests.observe,
    async exposition () {
      return `${await registry.metrics()}\n${requests.exposition()}`
    },
    backendError (backend) {
      backendErrors.inc({ backend })
    },
    webhookAttempt (outcome) {
      webhookAttempts.inc({ outcome })
    },
    countEvents: (audit) => ({
      ...audit,
      record (event) {
        countEvent(event)
        audit.record(event)
      }
    }),
    timeHashing: (hasher) => ({
      ...hasher,
      hash: async (password, caller) => await timed('hash', async () => await hasher.hash(password, caller)),
      verify: async (hash, password, caller) => await timed('verify', async () => await hasher.verify(hash, password, caller)),
      verifyDummy: async (password, caller) => { await timed('verify', async () => { await hasher.verifyDummy(password, caller) }) }
    })
  }
}
