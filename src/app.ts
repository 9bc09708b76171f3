import fastifyFormbody from '@fastify/formbody'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyRequest, type FastifyInstance, type FastifyReply, type FastifyServerOptions, type preValidationHookHandler } from 'fastify'
import type { Socket } from 'node:net'
import { createAccountAdmin, type AccountAdmin } from './accounts.js'
import { createAuthService, type AuthService } from './auth.js'
import { openBackends, type Backends } from './backends.js'
import type { Config } from './config.js'
import { accessLineWriter, logsInfo, RequestLogger, type AccessLineWriter, type LogBase } from './lib/access-log.js'
import { batchedStdout, type BatchedDestination } from './lib/log-destination.js'
import { MalformedFormError, parseFormEncoded, type FormParams } from './lib/form-encoding.js'
import { redactUrl } from './lib/redact.js'
import { refusalOf } from './http/refusal-log.js'
import { fastifyErrorReason, httpParserReason, malformedFormReason, reasons, type Reason } from './lib/bad-request.js'
import { badRequest, internalError, notFound, StatusError, statusErrorForHttp, UnavailableError, type Unavailable } from './lib/status.js'
import { createThrottledLog } from './lib/throttled-log.js'
import { protectCookieRoutes } from './http/cross-site.js'
import { hasSeveralHosts } from './http/host-header.js'
import { publicServesInternals, revocationsOpen } from './internal-surfaces.js'
import { authenticateRoutes } from './routes/authenticate.js'
import { EMPTY_BODY, refuseOtherMethods } from './routes/http.js'
import { loginRoutes } from './routes/login.js'
import { logoutRoutes } from './routes/logout.js'
import { verifyRoutes } from './routes/verify.js'
import { introspectRoutes } from './routes/introspect.js'
import { revocationRoutes } from './routes/revocations.js'
import { healthRoutes } from './routes/health.js'
import { registerOpenApi, registerOpenApiRoutes } from './routes/openapi.js'
import { PACKAGE_VERSION } from './version.js'
import { createMetrics, type Metrics } from './metrics.js'
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { Bindings, ChildLoggerOptions } from 'pino'
import type { IncomingMessage } from 'node:http'
import { fileURLToPath } from 'node:url'

declare module 'fastify' {
  interface FastifyInstance {
    /** The stores and services this app runs on (tests and the CLI reach them here). */
    backends: Backends
    auth: AuthService
    accounts: AccountAdmin
    metrics: Metrics
    /** Shutdown state: once draining, readiness answers 503. */
    lifecycle: { draining: boolean }
  }
}

export interface BuildAppOptions {
  /** Stores to use instead of those the config names; the app never closes what it was handed. */
  backends?: Backends
  logger?: FastifyServerOptions['logger']
  /**
   * Where the production logger (level from the config, redacting serializers) writes;
   * stdout when absent. Ignored when `logger` is given.
   */
  logStream?: NodeJS.WritableStream
}

/** Counts one finished request (Metrics.observeRequest). */
type RequestObserver = (route: string, method: string, status: number, seconds: number) => void

/**
 * One JSON line per request, when it completes: request id, method, redacted URL,
 * route, status, latency. (Fastify's default is two lines.) A route's own log level
 * applies, so health checks and /metrics stay out of the access log. With `writeLine`
 * (the service's own logger and destination) the line is written by hand
 * (lib/access-log.ts); with a logger of the caller's, through it.
 *
 * With `observe`, every request is also counted here, whatever its log level: Fastify calls
 * this once per finished response in an app that has a logger, so the request metrics need
 * no onResponse hook of their own (a hook run per request; bench/README.md).
 */
class OneLinePerRequest extends LogController {
  constructor (private readonly writeLine: AccessLineWriter | undefined, private readonly observe: RequestObserver | undefined) {
    super()
  }

  override incomingRequest (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // Fastify builds a fresh routeOptions object on every read: read once.
    const template = request.routeOptions.url
    const route = template ?? '(unmatched)'
    const responseTime = reply.elapsedTime
    this.observe?.(route, request.method, reply.statusCode, responseTime / 1000)
    if (error === null || error === undefined) {
      const statusCode = reply.statusCode
      // A 400 says its detail; a refusal whose answer says nothing may still tell the log why (http/refusal-log.ts).
      const detail = (statusCode === 400 ? BAD_REQUEST_DETAILS.get(request) : undefined) ?? refusalOf(request)
      if (this.writeLine === undefined) {
        reply.log.info({ req: request, route, statusCode, detail, responseTime }, 'request completed')
      } else if (logsInfo(reply.log.level)) {
        this.writeLine({ reqId: request.id, method: request.method, url: redactUrl(request.url, template), remoteAddress: request.ip, route, statusCode, detail, responseTime })
      }
    } else {
      reply.log.error({ req: request, route, statusCode: reply.statusCode, responseTime, err: error }, 'request errored')
    }
  }
}

/** A request's URL as the log shows it: the route template for a matched path, secret query values redacted. */
function loggedUrl (request: FastifyRequest): string {
  return redactUrl(request.url, request.routeOptions?.url)
}

/**
 * pino-pretty at a developer's terminal (NODE_ENV unset or development), when it is
 * installed (a dev dependency); undefined everywhere else.
 */
function prettyInDevelopment (config: Config): { transport: { target: string, options: Record<string, unknown> } } | undefined {
  if (config.nodeEnv !== 'development' || process.stdout.isTTY !== true) return undefined
  try {
    return { transport: { target: fileURLToPath(import.meta.resolve('pino-pretty')), options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } }
  } catch {
    return undefined
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The caller's `x-request-id` when it is a sane one, else a fresh UUID. */
function requestId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
}

/**
 * Marks a query string the strict parser refused, with why; the router cannot throw, so the
 * first hook does. (A parsed query holds no symbol key, so looking this up finds nothing.)
 */
const REFUSED_QUERY = Symbol('refused query')
type ParsedQuery = FormParams & { [REFUSED_QUERY]?: Reason }

function parseQuery (text: string): ParsedQuery {
  try {
    return parseFormEncoded(text)
  } catch (error) {
    if (!(error instanceof MalformedFormError)) throw error
    return Object.freeze({ [REFUSED_QUERY]: malformedFormReason(error, 'query string') }) as ParsedQuery
  }
}

function toStatusError (error: FastifyError | StatusError | Error, request: FastifyRequest): StatusError {
  if (error instanceof StatusError) return error
  if (error instanceof MalformedFormError) return badRequest(malformedFormReason(error, 'form body'))
  const httpStatus = 'statusCode' in error && typeof error.statusCode === 'number' ? error.statusCode : 500
  if (httpStatus === 400 || ('validation' in error && error.validation !== undefined)) return badRequest(fastifyErrorReason(error, request))
  return httpStatus >= 500 && httpStatus !== 503 ? internalError() : statusErrorForHttp(httpStatus)
}

/** The detail of each 400 answered, for its access-log line (weak: gone with the request). */
const BAD_REQUEST_DETAILS = new WeakMap<FastifyRequest, Reason>()

const UNAVAILABLE_MESSAGES: Readonly<Record<Unavailable, string>> = {
  redis: 'service unavailable: Redis did not answer',
  database: 'service unavailable: the database did not answer',
  directory: 'service unavailable: the directory did not answer',
  'hash-queue': 'service unavailable: the password-hash queue is full',
  'hash-thread': 'service unavailable: a hashing thread failed',
  revoked: 'service unavailable: the account\'s tokens were revoked while this Login ran (it may be sent again)'
}

/** The code or message of what made a 503, never its stack. */
function reasonOf (cause: unknown): string | undefined {
  if (!(cause instanceof Error)) return undefined
  const code = (cause as { code?: unknown }).code
  return typeof code === 'string' ? code : cause.message.slice(0, 200)
}

/**
 * The log of 503s: under a login flood or a backend outage they come by the thousand, and a
 * stack each (about 1 KB) said nothing the first had not. One short line per cause (what
 * could not answer, why) at most every 10 s, with the count of the repeats it stands for.
 * A full hash queue is load shed by design (warn); a backend that does not answer is an error.
 */
function unavailableLog (): (log: FastifyBaseLogger, error: UnavailableError) => void {
  const throttled = createThrottledLog()
  return (log, error) => {
    throttled(error.unavailable, (repeats) => {
      const line = { unavailable: error.unavailable, reason: reasonOf(error.cause), repeats }
      if (error.unavailable === 'hash-queue' || error.unavailable === 'revoked') log.warn(line, UNAVAILABLE_MESSAGES[error.unavailable])
      else log.error(line, UNAVAILABLE_MESSAGES[error.unavailable])
    })
  }
}

function sendStatusError (reply: FastifyReply, error: StatusError): FastifyReply {
  if (error.detail !== undefined) BAD_REQUEST_DETAILS.set(reply.request, error.detail)
  return reply.code(error.httpStatus).headers(error.headers).send(error.toBody())
}

/**
 * Headers for answers Node writes straight to the socket (malformed requests, over-long headers,
 * timeouts). False when the socket can no longer be written to (nothing was answered).
 */
function writeRawError (socket: Socket, error: StatusError): boolean {
  if (!socket.writable) return false
  const body = JSON.stringify(error.toBody())
  socket.end([
    `HTTP/1.1 ${error.httpStatus} ${error.message}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Cache-Control: no-store',
    'Referrer-Policy: no-referrer',
    'Connection: close',
    '',
    body
  ].join('\r\n'))
  return true
}

/** Trust the nearest `hops` proxies, as Fastify's numeric `trustProxy` does. */
function hopsTrusted (hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops
}

/** Path segments may be long (legacy path-style passwords): the router takes up to this many characters. */
const MAX_PATH_SEGMENT = 2048

function clientErrorStatus (code: string | undefined): number {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW': return 431
    case 'ERR_HTTP_REQUEST_TIMEOUT': return 408
    default: return 400
  }
}

/**
 * The app without a listening socket: the error model, cookie and form parsing,
 * and the three operations. The process entry (server.ts) listens; tests inject.
 */
export async function buildApp (config: Config, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  // The service's own logger (unless the caller brings one): pino with redacting serializers, writing
  // to stdout in batches that never wait for its reader, or to `logStream`; at a developer's
  // terminal, through pino-pretty.
  const base: LogBase = { pid: process.pid, hostname: hostname() }
  const pretty = options.logger === undefined && options.logStream === undefined ? prettyInDevelopment(config) : undefined
  const ownLogger = options.logger === undefined && pretty === undefined
  const stdout: BatchedDestination | undefined = ownLogger && options.logStream === undefined
    ? batchedStdout({ maxBufferedBytes: config.logBufferBytes, base })
    : undefined
  const stream = ownLogger ? options.logStream ?? stdout : undefined
  // Metrics read the backends lazily, so they exist first and can count the backends' errors.
  let sources: Backends | undefined
  const metrics = createMetrics({
    hashQueueDepth: () => sources?.hasher.queueDepth() ?? 0,
    auditDropped: () => sources?.audit.dropped() ?? 0,
    logLinesDropped: () => stdout?.droppedLines() ?? 0
  })
  // Fastify reports every finished response to the log controller only in an app with a logger
  // (tests pass `logger: false`); such an app counts its requests with an onResponse hook instead.
  const hasLogger = options.logger !== false
  const app = Fastify({
    logger: options.logger ?? {
      level: config.logLevel,
      base,
      serializers: {
        req: (request: FastifyRequest) => ({ method: request.method, url: loggedUrl(request), remoteAddress: request.ip })
      },
      ...(pretty ?? { stream })
    },
    logController: new OneLinePerRequest(stream === undefined ? undefined : accessLineWriter(stream, base), hasLogger ? metrics.observeRequest : undefined),
    // Most requests log only their access line, written without the request's child logger: it is made on first use.
    ...(stream === undefined ? {} : { childLoggerFactory: (logger: FastifyBaseLogger, bindings: Bindings, childOptions: ChildLoggerOptions) => new RequestLogger(logger, bindings, childOptions) }),
    genReqId: requestId,
    // A request without Host is answered like any other bad request (our body, not Node's empty 400).
    http: { requireHostHeader: false },
    bodyLimit: config.bodyLimitBytes,
    requestTimeout: config.requestTimeoutMs,
    trustProxy: typeof config.trustProxy === 'number'
      ? hopsTrusted(config.trustProxy)
      : config.trustProxy,
    exposeHeadRoutes: false,
    // While closing, requests already on open connections are served, not refused.
    return503OnClosing: false,
    routerOptions: {
      ignoreTrailingSlash: true,
      // Legacy path-style passwords can be long.
      maxParamLength: MAX_PATH_SEGMENT,
      querystringParser: parseQuery
    },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    frameworkErrors: (error, request, reply) => {
      // Bad percent-encoding in the path, over-long segments: never echo the path back. These run
      // before any hook, so the headers every answer carries, and the access-log line, are made here.
      reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer')
      const status = error.statusCode === 404
        ? notFound()
        : badRequest(error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? reasons.pathSegmentTooLong(MAX_PATH_SEGMENT) : reasons.badPercentEncoding('path'))
      request.log.info({ req: request, route: '(unmatched)', statusCode: status.httpStatus, detail: status.detail }, 'request completed')
      sendStatusError(reply, status)
    },
    clientErrorHandler: (error: Error & { code?: string }, socket: Socket) => {
      const httpStatus = clientErrorStatus(error.code)
      const status = httpStatus === 400 ? badRequest(httpParserReason(error.code)) : statusErrorForHttp(httpStatus)
      // No request was read, so no access line will be: this line says who was refused and why.
      if (writeRawError(socket, status)) app.log.info({ remoteAddress: socket.remoteAddress, statusCode: status.httpStatus, detail: status.detail }, 'request refused')
    }
  }).withTypeProvider<TypeBoxTypeProvider>()

  const ownBackends = options.backends === undefined
  const backends = options.backends ?? await openBackends(config, app.log, metrics.backendError)
  sources = backends
  if (ownBackends) app.addHook('onClose', async () => { await backends.close() })
  const observed = { ...backends, audit: metrics.countEvents(backends.audit), hasher: metrics.timeHashing(backends.hasher) }
  const auth = createAuthService({ ...observed, config })
  app.decorate('backends', backends)
  app.decorate('auth', auth)
  app.decorate('accounts', createAccountAdmin({ ...observed, passwordPolicy: { minLength: config.passwordMinLength, blocklist: true, refuseUsername: true } }))
  app.decorate('metrics', metrics)
  app.decorate('lifecycle', { draining: false })

  // The hooks every request runs are synchronous, callback-style: an async hook costs a
  // promise and a microtask turn per request, for work that never waits.
  app.addHook('onRequest', (request, reply, done) => {
    // Tokens and legacy credentials travel in URLs: nothing may cache or refer them onward.
    reply
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'no-referrer')
      .header('x-request-id', request.id)
    // HTTP/1.1 requires Host (RFC 9112 §3.2); answered with our 400 rather than Node's empty one.
    const refused = (request.query as ParsedQuery)[REFUSED_QUERY]
    // A route that reads its query itself (forward-auth: the query is the protected upstream's) says so in its config.
    if (refused !== undefined && request.routeOptions.config.ownQuery !== true) done(badRequest(refused))
    else if (request.headers.host === undefined && request.raw.httpVersion === '1.1') done(badRequest(reasons.hostRequired()))
    else if (hasSeveralHosts(request.raw.rawHeaders)) done(badRequest(reasons.hostGivenMoreThanOnce()))
    else done()
  })

  if (!hasLogger) {
    app.addHook('onResponse', (request, reply, done) => {
      metrics.observeRequest(request.routeOptions.url ?? '(unmatched)', request.method, reply.statusCode, reply.elapsedTime / 1000)
      done()
    })
  }

  // A request without a body validates as an empty parameter object where the route has a body
  // schema. Added to those routes only, so that the others (GET Authenticate) run no preValidation hook.
  const emptyBodyAsObject: preValidationHookHandler = (request, _reply, done) => {
    if (request.body === undefined) request.body = EMPTY_BODY
    done()
  }
  app.addHook('onRoute', (route) => {
    if (route.schema?.body === undefined) return
    const own = route.preValidation
    route.preValidation = own === undefined ? [emptyBodyAsObject] : [emptyBodyAsObject, ...(Array.isArray(own) ? own : [own])]
  })

  const logUnavailable = unavailableLog()
  app.setErrorHandler((error: FastifyError | StatusError, request, reply) => {
    const status = toStatusError(error, request)
    if (status instanceof UnavailableError) {
      logUnavailable(request.log, status)
    } else if (status.httpStatus >= 500) {
      // Anything else is a bug: the whole error, stack included.
      request.log.error({ err: status.cause ?? error }, status.message)
    }
    return sendStatusError(reply, status)
  })
  app.setNotFoundHandler(async (_request, reply) => sendStatusError(reply, notFound()))

  // Bodies are form-encoded or JSON; Fastify's own text/plain parser would let a third kind in (415 instead).
  app.removeContentTypeParser('text/plain')
  await app.register(fastifyFormbody, {
    bodyLimit: config.bodyLimitBytes,
    parser: parseFormEncoded
  })
  await registerOpenApi(app, PACKAGE_VERSION)
  // Before the routes: it adds its check to Login's and Logout's as they are registered.
  protectCookieRoutes(app, config.allowedOrigins)
  await app.register(loginRoutes, { auth, config })
  await app.register(authenticateRoutes, { auth })
  await app.register(logoutRoutes, { auth, config })
  await app.register(verifyRoutes, { auth, trustProxy: config.trustProxy })
  await app.register(introspectRoutes, { auth, config })
  // Outside production the public port keeps the internal surfaces too (a first run); never in production.
  const internals = publicServesInternals(config)
  if (internals) {
    await app.register(revocationRoutes, {
      tokens: backends.tokens,
      key: config.revocationsKey,
      open: revocationsOpen(config),
      maxSubscribers: config.revocationsMaxSubscribers
    })
  }
  await app.register(healthRoutes, {
    tokens: backends.tokens,
    database: backends.database,
    names: { tokens: 'redis' in backends.tokens ? 'redis' : 'in-process', database: backends.database.kind },
    draining: () => app.lifecycle.draining,
    timeoutMs: config.healthTimeoutMs
  })
  if (internals) {
    registerMetricsRoute(app, metrics)
    await registerOpenApiRoutes(app)
  }
  return app
}

/** GET /metrics in Prometheus' text format; on the internal listener, and on the main app outside production. */
export function registerMetricsRoute (app: FastifyInstance, metrics: Metrics): void {
  app.get('/metrics', {
    logLevel: 'silent',
    schema: { tags: ['operations'], summary: 'Prometheus metrics (text exposition format)' }
  }, async (_request, reply) => {
    return await reply.type(metrics.registry.contentType).send(await metrics.exposition())
  })
  refuseOtherMethods(app, '/metrics', ['GET'])
}
