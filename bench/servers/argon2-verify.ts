import { verify as nodeRsVerify } from '@node-rs/argon2'
import argon2 from 'argon2'
import Fastify from 'fastify'
import { createBoundedQueue } from '../../src/passwords/bounded-queue.js'
import { listen, requiredEnv } from './listen.js'

/**
 * Baseline and ceiling of Login: raw argon2id verifies of a hash made at the service's
 * parameters (m=19456, t=2, p=1), through the service's own bounded queue at the
 * service's concurrency, behind a Fastify route so it is measured like Login.
 * BENCH_BINDING: `argon2` (node-argon2, what the service lists) or `node-rs` (@node-rs/argon2).
 */
const hash = requiredEnv('BENCH_HASH')
const password = requiredEnv('BENCH_PASSWORD')
const binding = requiredEnv('BENCH_BINDING')
const verify: (hash: string, password: string) => Promise<boolean> =
  binding === 'node-rs' ? nodeRsVerify : binding === 'argon2' ? argon2.verify : () => { throw new Error(`unknown BENCH_BINDING ${binding}`) }
const queue = createBoundedQueue(Number(requiredEnv('BENCH_CONCURRENCY')), Number(requiredEnv('BENCH_QUEUE_MAX')))

const app = Fastify({ logger: false })
// The bench waits for `depth` 0 between scenarios: hashes of requests it stopped waiting for still run.
app.get('/health', async () => ({ status: 0, depth: queue.depth() }))
app.post('/', async (_request, reply) => {
  const ok = await queue.run(async () => await verify(hash, password))
  if (!ok) return await reply.code(500).send({ status: 500, message: 'verify failed' })
  return { status: 0, message: 'Success' }
})
await listen(app)
