import fastifyFormbody from '@fastify/formbody'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import { listen, requiredEnv } from './listen.js'

/**
 * Baseline and ceilings of Authenticate: a Fastify route doing exactly one ioredis GET (the
 * key of a real token record) and answering a small JSON object. Authenticate does this GET
 * and nothing else that waits, so it can only approach this figure.
 *
 * `GET /` is the plain ceiling (`one-get`). The /auth/Authenticate routes take each token
 * source's own request (the same method, path, query, cookie or form body) and do the same
 * one GET without looking at the token: what each shape of request costs in Fastify and Node
 * before any work of the service's (with a form body the route made 0.83-0.84 of its GET's
 * throughput here, bench/README.md), so each source is judged against the ceiling of its own
 * shape.
 */
const redis = new Redis(requiredEnv('BENCH_REDIS_URL'))
const key = requiredEnv('BENCH_KEY')
const app = Fastify({ logger: false })
const answer = async (): Promise<{ status: number, value: string | null }> => ({ status: 0, value: await redis.get(key) })
app.get('/', answer)
await app.register(fastifyFormbody)
app.get('/auth/Authenticate/:token', answer)
app.post('/auth/Authenticate/:token', answer)
app.get('/auth/Authenticate', answer)
app.post('/auth/Authenticate', answer)
// Forward-auth's request: GET /auth/verify with Authorization: Bearer (the shape gateways send).
app.get('/auth/verify', answer)
await listen(app, async () => { await redis.quit() })
