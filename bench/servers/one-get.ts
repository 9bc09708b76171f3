import Fastify from 'fastify'
import { Redis } from 'ioredis'
import { listen, requiredEnv } from './listen.js'

/**
 * Baseline and ceiling of Authenticate: a Fastify route doing exactly one ioredis GET
 * (the key of a real token record) and answering a small JSON object. Authenticate
 * does this GET and nothing else that waits, so it can only approach this figure.
 */
const redis = new Redis(requiredEnv('BENCH_REDIS_URL'))
const key = requiredEnv('BENCH_KEY')
const app = Fastify({ logger: false })
app.get('/', async () => ({ status: 0, value: await redis.get(key) }))
await listen(app, async () => { await redis.quit() })
