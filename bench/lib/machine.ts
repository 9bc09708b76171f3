import { readFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, release, totalmem, type } from 'node:os'
import { Redis } from 'ioredis'
import { postgresVersion } from './fixture.js'

export interface Machine {
  date: string
  cores: number
  cpu: string
  memoryGiB: number
  os: string
  node: string
  redis: string
  postgres: string
  autocannon: string
  /** 1-, 5- and 15-minute load averages when the bench started: a busy machine shows here. */
  loadAverage: number[]
}

export async function describeMachine (root: string, redisUrl: string, databaseUrl: string): Promise<Machine> {
  const redis = new Redis(redisUrl)
  try {
    const server = await redis.info('server')
    const autocannon = JSON.parse(readFileSync(`${root}/node_modules/autocannon/package.json`, 'utf8')) as { version: string }
    return {
      date: new Date().toISOString(),
      cores: availableParallelism(),
      cpu: cpus()[0]?.model.trim() ?? 'unknown',
      memoryGiB: Math.round(totalmem() / 2 ** 30 * 10) / 10,
      os: `${type()} ${release()}`,
      node: process.version,
      redis: /redis_version:(\S+)/.exec(server)?.[1] ?? 'unknown',
      postgres: await postgresVersion(databaseUrl),
      autocannon: autocannon.version,
      loadAverage: loadavg().map((value) => Math.round(value * 100) / 100)
    }
  } finally {
    redis.disconnect()
  }
}
