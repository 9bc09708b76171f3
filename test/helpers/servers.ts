import { randomBytes } from 'node:crypto'
import { Socket } from 'node:net'
import { Redis } from 'ioredis'
import type { Test } from 'tap'
import { takePooledDatabase } from './postgres-pool.js'

/**
 * Real servers for the tests. The running Redis and Postgres are used (override with
 * TEST_REDIS_URL / TEST_DATABASE_URL); when one is absent the run fails with the
 * command that starts it. Nothing is skipped.
 */

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

const HOW_TO = {
  redis: 'start one with `redis-server --daemonize yes --port 6379 --save "" --appendonly no` (Debian: apt-get install redis-server), or set TEST_REDIS_URL; `bash .ci/run` does both',
  postgres: 'start one with `pg_ctlcluster 15 main start` (Debian: apt-get install postgresql), or set TEST_DATABASE_URL; `bash .ci/run` does both'
}

async function reachable (url: string): Promise<boolean> {
  const { hostname, port } = new URL(url)
  return await new Promise((resolve) => {
    const socket = new Socket()
    socket.setTimeout(1000)
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('timeout', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => { resolve(false) })
    socket.connect(Number(port), hostname)
  })
}

export async function requireRedis (): Promise<string> {
  if (!await reachable(TEST_REDIS_URL)) throw new Error(`Redis is required at ${TEST_REDIS_URL}: ${HOW_TO.redis}`)
  return TEST_REDIS_URL
}

export async function requirePostgres (): Promise<string> {
  if (!await reachable(TEST_DATABASE_URL)) throw new Error(`Postgres is required at ${TEST_DATABASE_URL}: ${HOW_TO.postgres}`)
  return TEST_DATABASE_URL
}

export function uniqueName (prefix: string): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`
}

/**
 * An empty Postgres database for one test, its own until the test ends. Returns its URL.
 * Taken from a pool of reused databases, emptied when taken (postgres-pool.ts): creating
 * and dropping one cost seconds each time.
 */
export async function freshPostgresDatabase (t: Test): Promise<string> {
  return await takePooledDatabase(t, await requirePostgres())
}

/** A key prefix of its own for one test on the shared Redis; its keys are deleted at the end. */
export async function freshRedisPrefix (t: Test): Promise<string> {
  const url = await requireRedis()
  // A hash tag, like the service's default prefix: the same prefix works on a Redis Cluster.
  const prefix = `{${uniqueName('atstest')}}:`
  t.teardown(async () => {
    const redis = new Redis(url)
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      if (keys.length > 0) await redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
    await redis.quit()
  })
  return prefix
}
