import type { Bindings, ChildLoggerOptions, LevelWithSilentOrString } from 'pino'
import type { FastifyBaseLogger } from 'fastify'
import { escapeControlCharacters } from '@auth-token-service/protocol/log-escape'

/**
 * The access log, the one line most requests log, written without pino's generic path:
 * pino's field-by-field serialization and the child logger Fastify makes for every request
 * were a tenth of the service's busy profile samples on Authenticate; writing the line here
 * (with the child made on first use) took the CPU per request to 0.89-1.03 ×, median 0.93
 * (bench/README.md). The line is the one
 * pino writes for `log.child({ reqId, traceId }).info({ req, route, statusCode, detail, responseTime },
 * 'request completed')` with the same base fields, byte for byte (test/logging/access-log.test.ts),
 * and goes to the same destination, so it keeps its order among the other lines.
 */

/** What pino puts in every line of the service's logger (its defaults, made explicit so both writers share them). */
export interface LogBase {
  pid: number
  hostname: string
}

export interface AccessEntry {
  reqId: string
  /** The request's trace (tracing on: trace-id.ts); absent otherwise. */
  traceId?: string | undefined
  method: string
  /** Already redacted (redactUrl). */
  url: string
  remoteAddress: string | undefined
  route: string
  statusCode: number
  /** A 400's detail (errors/reasons.ts); absent, as pino leaves out an undefined field, otherwise. */
  detail?: string | undefined
  /** Milliseconds. */
  responseTime: number
}

// Anything JSON.stringify would escape, plus what a log viewer might break a line on.
// eslint-disable-next-line no-control-regex
const NEEDS_ESCAPING = /[\u0000-\u001f"\\\u007f-\u009f\u2028\u2029\ud800-\udfff]/

/** A JSON string literal holding no control character and no Unicode line separator, escaped or not. */
export function jsonText (text: string): string {
  return NEEDS_ESCAPING.test(text) ? escapeControlCharacters(JSON.stringify(text)) : `"${text}"`
}

export type AccessLineWriter = (entry: AccessEntry) => void

/** Writes each entry as one `request completed` line at level info to `stream`. */
export function accessLineWriter (stream: { write: (line: string) => unknown }, base: LogBase): AccessLineWriter {
  const head = `,"pid":${base.pid},"hostname":${jsonText(base.hostname)},"reqId":`
  return (entry) => {
    const remoteAddress = entry.remoteAddress === undefined ? '' : `,"remoteAddress":${jsonText(entry.remoteAddress)}`
    const detail = entry.detail === undefined ? '' : `,"detail":${jsonText(entry.detail)}`
    const traceId = entry.traceId === undefined ? '' : `,"traceId":${jsonText(entry.traceId)}`
    stream.write(`{"level":30,"time":${Date.now()}${head}${jsonText(entry.reqId)}${traceId},"req":{"method":${jsonText(entry.method)},"url":${jsonText(entry.url)}${remoteAddress}},"route":${jsonText(entry.route)},"statusCode":${entry.statusCode}${detail},"responseTime":${Number.isFinite(entry.responseTime) ? entry.responseTime : 'null'},"msg":"request completed"}\n`)
  }
}

const LEVEL_VALUES: Readonly<Record<string, number>> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Number.POSITIVE_INFINITY }

/** Whether a logger at `level` writes lines of level info. */
export function logsInfo (level: LevelWithSilentOrString): boolean {
  return (LEVEL_VALUES[level] ?? 30) <= 30
}

type LogMethod = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'

/**
 * A request's logger (Fastify's `childLoggerFactory`): pino's child, with the request id
 * bound, made when the first line is logged through it. Until then its level is the one
 * the child would have (the route's `logLevel`, else the parent's).
 */
export class RequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined

  private readonly parent: FastifyBaseLogger
  private readonly bindings: Bindings
  private readonly options: ChildLoggerOptions

  constructor (parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.parent = parent
    this.bindings = bindings
    this.options = options
  }

  private logger (): FastifyBaseLogger {
    this.#child ??= this.parent.child(this.bindings, this.options)
    return this.#child
  }

  private forward (method: LogMethod, args: unknown[]): void {
    const logger = this.logger()
    Reflect.apply(logger[method], logger, args)
  }

  get level (): LevelWithSilentOrString {
    return this.#child?.level ?? this.options.level ?? this.parent.level
  }

  set level (level: LevelWithSilentOrString) {
    this.logger().level = level
  }

  fatal (...args: unknown[]): void { this.forward('fatal', args) }
  error (...args: unknown[]): void { this.forward('error', args) }
  warn (...args: unknown[]): void { this.forward('warn', args) }
  info (...args: unknown[]): void { this.forward('info', args) }
  debug (...args: unknown[]): void { this.forward('debug', args) }
  trace (...args: unknown[]): void { this.forward('trace', args) }
  silent (...args: unknown[]): void { this.forward('silent', args) }

  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, options)
  }
}
