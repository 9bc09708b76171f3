import { hash as nodeRsHash, verify as nodeRsVerify, type Algorithm } from '@node-rs/argon2'
import argon2 from 'argon2'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { PasswordHasher } from '../../src/passwords/hasher.js'
import { listen, requiredEnv } from './listen.js'

/**
 * The service itself (dist/, production settings, the same env as the service under test)
 * with one change: its password hasher runs on the argon2 binding BENCH_BINDING names
 * (`argon2` or `node-rs`), same parameters, same bounded queue, same PHC strings. So a
 * binding is compared on the service's own Login route, not only in a raw loop.
 */
type AppModule = typeof import('../../src/app/app.js')
type BackendsModule = typeof import('../../src/app/backends.js')
type ConfigModule = typeof import('../../src/config/config.js')
type PasswordsModule = typeof import('../../src/passwords/hasher.js')
type QueueModule = typeof import('../../src/passwords/bounded-queue.js')

const dist = (path: string): string => pathToFileURL(join(requiredEnv('BENCH_ROOT'), 'dist', path)).href
// From dist/, like the service: one copy of every class (StatusError above all) in the process.
const { buildApp } = await import(dist('app/app.js')) as AppModule
const { openBackends } = await import(dist('app/backends.js')) as BackendsModule
const { loadConfig } = await import(dist('config/config.js')) as ConfigModule
const { canonicalPhc, createPasswordHasher } = await import(dist('passwords/hasher.js')) as PasswordsModule
const { createBoundedQueue } = await import(dist('passwords/bounded-queue.js')) as QueueModule

const config = loadConfig()
const binding = requiredEnv('BENCH_BINDING')
const policy = config.argon2
const ARGON2ID = 2

const bindings = {
  argon2: {
    hash: async (password: string) => await argon2.hash(password, { type: argon2.argon2id, ...policy, hashLength: 32 }),
    verify: async (hash: string, password: string) => await argon2.verify(hash, password)
  },
  'node-rs': {
    hash: async (password: string) => await nodeRsHash(password, { algorithm: ARGON2ID as Algorithm, ...policy, outputLen: 32 }),
    verify: async (hash: string, password: string) => await nodeRsVerify(hash, password)
  }
}
if (binding !== 'argon2' && binding !== 'node-rs') throw new Error(`unknown BENCH_BINDING ${binding}`)
const chosen = bindings[binding]

const own = createPasswordHasher(policy, config.hashing)
const queue = createBoundedQueue(config.hashing.concurrency, config.hashing.maxQueued)
const verify = async (hash: string, password: string): Promise<boolean> => await queue.run(async () => await chosen.verify(hash, password).catch(() => false))
let dummy: Promise<string> | undefined
const hasher: PasswordHasher = {
  hash: async (password) => await queue.run(async () => canonicalPhc(await chosen.hash(password))),
  verify,
  async verifyDummy (password) {
    dummy ??= chosen.hash('a password nobody has')
    await verify(await dummy, password)
  },
  needsRehash: (hash) => own.needsRehash(hash),
  queueDepth: () => queue.depth(),
  close: async () => { await own.close() }
}

const silent = { info: () => {}, warn: () => {}, error: () => {} }
const backends = await openBackends(config, silent)
const app = await buildApp(config, { backends: { ...backends, hasher } })
// Its hash queue, for the bench's quiesce step: this app has no internal listener, where /metrics lives.
app.get('/bench/hash-queue-depth', { logLevel: 'silent' }, async () => ({ depth: hasher.queueDepth() }))
await listen(app, async () => { await backends.close() })
