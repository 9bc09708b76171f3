import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import { hostname } from 'node:os'
import { fileURLToPath } from 'node:url'
import type { Bindings, ChildLoggerOptions } from 'pino'
import type { LoggingSettings } from '../config/parts/logging.js'
import { accessLineWriter, logsInfo, RequestLogger, type AccessLineWriter, type LogBase } from './access-log.js'
import { badRequestDetail } from '../http/errors.js'
import { batchedStdout } from './log-destination.js'
import { redactUrl } from '@auth-token-service/protocol/redact'
import { refusalOf } from './refusal-log.js'
import { requestId } from './request-id.js'
import { traceIdOf } from './trace-id.js'

/** Counts one finished request (Metrics.observeRequest). */
export type RequestObserver = (route: string, method: string, status: number, seconds: number) => void

/**
 * One JSON line per request, when it completes: request id, method, redacted URL,
 * route, status, latency. (Fastify's default is two lines.) A route's own log level
 * applies, so health checks and /metrics stay out of the access log. With `writeLine`
 * (the service's own logger and destination) the line is written by hand
 * (access-log.ts); with a logger of the caller's, through it.
 *
 * Every request is also counted here, whatever its log level: Fastify calls this once per
 * finished response (an app always has a logger, silent at the least), so the request
 * metrics need no onResponse hook of their own (a hook run per request; bench/README.md).
 */
class OneLinePerRequest extends LogController {
  private readonly writeLine: AccessLineWriter | undefined
  private readonly observe: RequestObserver

  constructor (writeLine: AccessLineWriter | undefined, observe: RequestObserver) {
    super()
    this.writeLine = writeLine
    this.observe = observe
  }

  override incomingRequest (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // Fastify builds a fresh routeOptions object on every read: read once.
    const template = request.routeOptions.url
    const route = template ?? '(unmatched)'
    const responseTime = reply.elapsedTime
    this.observe(route, request.method, reply.statusCode, responseTime / 1000)
    if (error === null || error === undefined) {
      const statusCode = reply.statusCode
      // A 400 says its detail; a refusal whose answer says nothing may still tell the log why (refusal-log.ts).
      const detail = (statusCode === 400 ? badRequestDetail(request) : undefined) ?? refusalOf(request)
      if (this.writeLine === undefined) {
        reply.log.info({ req: request, route, statusCode, detail, responseTime, traceId: traceIdOf(request) }, 'request completed')
      } else if (logsInfo(reply.log.level)) {
        this.writeLine({ reqId: request.id, traceId: traceIdOf(request), method: request.method, url: redactUrl(request.url, template), remoteAddress: request.ip, route, statusCode, detail, responseTime })
      }
    } else {
      reply.log.error({ req: request, route, statusCode: reply.statusCode, responseTime, err: error }, 'request errored')
    }
  }
}

/**
 * The internal listener's logging: an access line per request like the public port's, written
 * through the service's logger (so with its redacting `req` serializer, to its destination),
 * marked `"listener":"internal"`. Its requests are not counted in the public request metrics.
 */
export function internalListenerLogging (log: FastifyBaseLogger): Pick<FastifyServerOptions, 'loggerInstance' | 'logController' | 'genReqId'> {
  return { loggerInstance: log.child({ listener: 'internal' }), logController: new OneLinePerRequest(undefined, () => {}), genReqId: requestId }
}

/** A request's URL as the log shows it: the route template for a matched path, secret query values redacted. */
function loggedUrl (request: FastifyRequest): string {
  return redactUrl(request.url, request.routeOptions?.url)
}

/**
 * pino-pretty at a developer's terminal (NODE_ENV unset or development), when it is
 * installed (a dev dependency); undefined everywhere else.
 */
function prettyInDevelopment (config: Pick<LoggingSettings, 'nodeEnv'>): { transport: { target: string, options: Record<string, unknown> } } | undefined {
  if (config.nodeEnv !== 'development' || process.stdout.isTTY !== true) return undefined
  try {
    return { transport: { target: fileURLToPath(import.meta.resolve('pino-pretty')), options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } }
  } catch {
    return undefined
  }
}

export interface LoggingOptions {
  /** A logger of the caller's instead of the service's own; `false` is a silent one. */
  logger?: FastifyServerOptions['logger']
  /** Where the service's own logger writes; stdout when absent. Ignored when `logger` is given. */
  logStream?: NodeJS.WritableStream
}

export interface ServiceLogging {
  /** Log lines the stdout destination dropped (its reader slow or gone); 0 when the log goes elsewhere. */
  droppedLines (): number
  /** Fastify's logging options: the logger, the access line and request counting, request ids. */
  fastifyOptions (observe: RequestObserver): Pick<FastifyServerOptions, 'logger' | 'logController' | 'childLoggerFactory' | 'genReqId'>
}

/**
 * The service's own logger (unless the caller brings one): pino with redacting serializers,
 * writing to stdout in batches that never wait for its reader, or to `logStream`; at a
 * developer's terminal, through pino-pretty.
 */
export function serviceLogging (config: LoggingSettings, options: LoggingOptions): ServiceLogging {
  const base: LogBase = { pid: process.pid, hostname: hostname() }
  const pretty = options.logger === undefined && options.logStream === undefined ? prettyInDevelopment(config) : undefined
  const ownLogger = options.logger === undefined && pretty === undefined
  const stdout = ownLogger && options.logStream === undefined
    ? batchedStdout({ maxBufferedBytes: config.logBufferBytes, base })
    : undefined
  const stream = ownLogger ? options.logStream ?? stdout : undefined
  return {
    droppedLines: () => stdout?.droppedLines() ?? 0,
    fastifyOptions: (observe) => ({
      // Never Fastify's `false` (no logger at all): without a logger Fastify reports no finished
      // response to the log controller, and requests would go uncounted.
      logger: options.logger === false
        ? { level: 'silent' }
        : options.logger ?? {
          level: config.logLevel,
          base,
          serializers: {
            req: (request: FastifyRequest) => ({ method: request.method, url: loggedUrl(request), remoteAddress: request.ip })
          },
          ...(pretty ?? { stream })
        },
      logController: new OneLinePerRequest(stream === undefined ? undefined : accessLineWriter(stream, base), observe),
      // Most requests log only their access line, written without the request's child logger: it is made on first use.
      ...(stream === undefined ? {} : { childLoggerFactory: (logger: FastifyBaseLogger, bindings: Bindings, childOptions: ChildLoggerOptions) => new RequestLogger(logger, bindings, childOptions) }),
      genReqId: requestId
    })
  }
}
