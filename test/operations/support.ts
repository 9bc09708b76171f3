import { Writable } from 'node:stream'
import type { Test } from 'tap'
import { assembleBackends, type Backends, type ServiceTokenStore } from '../../src/app/backends.js'
import type { Config } from '../../src/config/config.js'
import type { Database } from '../../src/db/database.js'

/**
 * Helpers of the operations tests: backends assembled from given parts (a dead Redis,
 * a dead Postgres), a capture of what the production logger writes, a Prometheus text reader.
 */

/** Backends over the given database and token store; closed at the end of the test. */
export function backendsOf (t: Test, config: Config, database: Database, tokens: ServiceTokenStore): Backends {
  const backends = assembleBackends(config, { database, tokens })
  t.teardown(async () => { await backends.close() })
  return backends
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
