import { buildOrdersApp } from '../../examples/orders-service/src/app.js'
import { listen, requiredEnv } from './listen.js'

/**
 * The example orders-service, its guard in direct mode (one GET against the token
 * service's Redis per request) with or without the local cache (BENCH_CACHE=on).
 * Logger off, like the bare route it is compared with.
 */
const cache = process.env.BENCH_CACHE === 'on' ? { cache: { maxEntries: 10_000, ttlMs: 30_000 } } : {}
const app = await buildOrdersApp({
  guard: { redisUrl: requiredEnv('BENCH_REDIS_URL'), keyPrefix: requiredEnv('BENCH_KEY_PREFIX'), ...cache },
  logger: false
})
await listen(app)
