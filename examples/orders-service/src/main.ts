import type { AuthTokenGuardOptions } from '@auth-token-service/guard'
import { buildOrdersApp } from './app.js'

/**
 * Runs orders-service against a running token service: `npm run example` from the
 * repository root. Over HTTP by default (the service at AUTH_SERVICE_URL, default
 * http://127.0.0.1:3000, which is where `npm start` listens); straight on the service's
 * Redis when REDIS_URL is set (the service's own REDIS_URL and AUTH_REDIS_KEY_PREFIX).
 * Either way with a cache of positive answers that the service's revocations keep right.
 */

interface Settings {
  host: string
  port: number
  guard: AuthTokenGuardOptions
  /** How the guard verifies, for the start-up line. */
  verifies: string
}

function settings (env: NodeJS.ProcessEnv): Settings {
  const port = Number(env.ORDERS_PORT ?? '4000')
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`ORDERS_PORT: expected a port number, got "${env.ORDERS_PORT ?? ''}"`)
  const host = env.ORDERS_HOST ?? '127.0.0.1'
  const cache = { maxEntries: 10_000, ttlMs: 30_000 }
  const redisUrl = env.REDIS_URL?.trim()
  if (redisUrl !== undefined && redisUrl !== '') {
    const keyPrefix = env.AUTH_REDIS_KEY_PREFIX?.trim()
    const guard = { redisUrl, cache, ...(keyPrefix === undefined || keyPrefix === '' ? {} : { keyPrefix }) }
    return { host, port, guard, verifies: `straight on the service's Redis (key prefix ${keyPrefix ?? 'the default, {ats}:'})` }
  }
  let base: URL
  try {
    base = new URL(env.AUTH_SERVICE_URL ?? 'http://127.0.0.1:3000')
  } catch {
    throw new Error(`AUTH_SERVICE_URL: not a URL: "${env.AUTH_SERVICE_URL ?? ''}"`)
  }
  const authenticateUrl = new URL('/auth/Authenticate', base)
  // The revocation feed is on the service's internal listener (only there unless AUTH_PUBLIC_INTERNALS), behind its key.
  const internal = env.AUTH_INTERNAL_URL?.trim()
  const revocationsKey = env.AUTH_REVOCATIONS_KEY?.trim()
  const feed = {
    ...(internal === undefined || internal === '' ? {} : { revocationsUrl: new URL('/auth/revocations', internal) }),
    ...(revocationsKey === undefined || revocationsKey === '' ? {} : { revocationsKey })
  }
  return { host, port, guard: { authenticateUrl, cache, ...feed }, verifies: `over HTTP with ${authenticateUrl.href}` }
}

let config: Settings
try {
  config = settings(process.env)
} catch (error) {
  process.stderr.write(`orders-service: ${(error as Error).message}\n`)
  process.exit(1)
}

const app = await buildOrdersApp({ guard: config.guard })
try {
  await app.listen({ host: config.host, port: config.port })
} catch (error) {
  process.stderr.write(`orders-service: cannot listen on ${config.host}:${config.port}: ${(error as Error).message}\n`)
  await app.close()
  process.exit(1)
}
const address = app.server.address()
const url = `http://${config.host}:${typeof address === 'object' && address !== null ? address.port : config.port}`
// For the person who started it (the JSON lines above are the request log).
process.stderr.write(`orders-service on ${url} verifies tokens ${config.verifies}\n` +
  `try: curl -s -H "Authorization: Bearer $TOKEN" ${url}/orders\n`)

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    app.close().then(() => { process.exit(0) }, () => { process.exit(1) })
  })
}
