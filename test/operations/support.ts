import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { assembleBackends, type Backends } from '../../src/backends.js'
import type { Config } from '../../src/config.js'
import { migrate } from '../../src/db/migrate.js'
import { createPostgresDatabase } from '../../src/db/postgres.js'
import type { Database } from '../../src/db/database.js'
import type { ServiceTokenStore } from '../../src/backends.js'
import { freshPostgresDatabase } from '../../support/postgres.js'

/**
 * Helpers of the operations tests: backends assembled from given parts (a dead Redis,
 * a dead Postgres), a capture of what the production logger writes, a Prometheus text
 * reader, and the built service started as a real process.
 */

/** Backends over the given database and token store; closed at the end of the test. */
export function backendsOf (t: Test, config: Config, database: Database, tokens: ServiceTokenStore): Backends {
  const backends = assembleBackends(config, { database, tokens })
  t.teardown(async () => { await backends.close() })
  return backends
}

/** A fresh Postgres database with the migrations applied (as compose's one-shot `migrate` leaves it); dropped at the end. */
export async function migratedDatabaseUrl (t: Test): Promise<string> {
  const url = await freshPostgresDatabase(t)
  const database = createPostgresDatabase({ connectionString: url })
  try {
    await migrate(database)
  } finally {
    await database.close()
  }
  return url
}

/** Every write the logger made; pino writes one whole line per record. */
export class LogCapture extends Writable {
  readonly writes: string[] = []
  override _write (chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.writes.push(typeof chunk === 'string' ? chunk : chunk.toString('utf8'))
    done()
  }

  /** The lines written since `mark` (an index from `mark()`). */
  since (mark: number): string[] {
    return this.writes.slice(mark).join('').split('\n').filter((line) => line !== '')
  }

  mark (): number {
    return this.writes.length
  }
}

/** An object parsed from a JSON text, or undefined when it is not one. */
export function jsonObject (text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

/**
 * The value of one sample in Prometheus' text format: `name{labels} value`, the
 * labels matched as a set (any order, others allowed). Undefined when absent.
 */
export function sample (text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue
    const match = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line)
    if (match === null || match[1] !== name) continue
    const present = new Map<string, string>()
    for (const pair of (match[2] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      present.set(pair[1] ?? '', pair[2] ?? '')
    }
    if (Object.entries(labels).every(([key, value]) => present.get(key) === value)) return Number(match[3])
  }
  return undefined
}

/** The metric's `# TYPE` line says this type. */
export function metricType (text: string, name: string): string | undefined {
  return new RegExp(`^# TYPE ${name} (\\w+)$`, 'm').exec(text)?.[1]
}

/** A TCP port nothing listens on right now (listened on, then released). */
export async function freePort (): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}

export async function tempDir (t: Test, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url))

export interface Service {
  child: ChildProcess
  baseUrl: string
  /** Everything the process wrote to stdout and stderr so far. */
  output: () => string
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>
}

/**
 * The built service (`node dist/cli/main.js serve`) as a real process on a free
 * loopback port, in `cwd`, with only the given environment (and PATH). Killed at the
 * end of the test if still running.
 */
export async function startService (t: Test, cwd: string, env: Record<string, string>): Promise<Service> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` (npm test does it first)`)
  const child = spawn(process.execPath, [CLI, 'serve'], {
    cwd,
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = new Promise<number | null>((resolve) => { child.once('exit', (code) => { resolve(code) }) })
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGKILL')
    await exited
  })
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => { reject(new Error(`no listening line within 60 s:\n${output}`)) }, 60_000)
    const look = (): void => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match?.[1] !== undefined) { clearTimeout(timer); resolve(match[1]) }
    }
    child.stdout?.on('data', look)
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`exited with ${code}:\n${output}`)) })
  })
  return { child, baseUrl, output: () => output, exited }
}
