import fastifyFormbody from '@fastify/formbody'
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
const answer = async () => ({ status: 0, value: await redis.get(key) })
app.get('/', answer)
// The same route taking a form POST (`one-get-form`): what a request with a body costs in
// Fastify and Node before any of the service's own work, beside Authenticate by form body.
await app.register(fastifyFormbody)
app.post('/', answer)
await listen(app, async () => { await redis.quit() })
