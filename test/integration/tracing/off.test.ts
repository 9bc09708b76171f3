import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { tracingSettings } from '../../../src/tracing/settings.js'
import { startOtlpReceiver } from '../../../support/otlp-receiver.js'
import { migratedDatabaseUrl } from '../../../support/postgres.js'
import { tempDir } from '../../../support/processes.js'
import { freshRedisPrefix, requireRedis } from '../../../support/redis.js'
import { runCli, startService } from '../../../support/service.js'

/*
 * Tracing is opt-in: without an OTLP endpoint the serving process loads nothing of
 * OpenTelemetry's SDK, instrumentations or module hooks (the API, a no-op facade, prom-client
 * loaded already), so its cost is nil; with
 * one, it loads them, exports with the protocol asked for, and flushes on SIGTERM.
 */

const RECORDER = fileURLToPath(new URL('../../fixtures/record-modules.mjs', import.meta.url))
// @opentelemetry/api itself is loaded with tracing off too, and was before tracing came: prom-client's
// default metrics require it (for exemplars). Without an SDK registered it is a no-op facade.
const OPENTELEMETRY = /@opentelemetry[/\\](?!api[/\\])|import-in-the-middle|require-in-the-middle|@fastify[/\\]otel/

t.test('tracingSettings reads the standard variables', async (t) => {
  t.equal(tracingSettings({}), undefined, 'no endpoint: off')
  t.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }), undefined, 'a blank endpoint: off')
  t.same(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), { protocol: 'http/protobuf', exportBatchSize: 512 }, 'the specification\'s default protocol')
  t.same(tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), { protocol: 'http/json', exportBatchSize: 512 }, 'the traces endpoint alone')
  t.same(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }), { protocol: 'http/json', exportBatchSize: 512 }, 'the traces protocol wins')
  t.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'TRUE' }), undefined, 'OTEL_SDK_DISABLED')
  t.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }), undefined, 'OTEL_TRACES_EXPORTER=none')
  t.throws(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), /OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported/)
  t.throws(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'zipkin' }), /OTEL_TRACES_EXPORTER/)
  t.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '128' })?.exportBatchSize, 128, 'the export batch as asked (the SDK\'s 512 unless asked)')
  t.throws(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '0' }), /OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "0" is not a whole number of spans/)
})

t.test('serve with a protocol it cannot send stops at once, on one line', async (t) => {
  const dir = await tempDir(t, 'ats-otel-')
  const failure = await runCli(['serve'], { AUTH_DATA_DIR: join(dir, 'data'), OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })
    .then(() => undefined, (error: unknown) => String(error))
  t.match(failure, /exited with 1: auth-token-service: configuration error: OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported/)
})

t.test('the modules a serving process loads, tracing off and on', async (t) => {
  const backends = { DATABASE_URL: await migratedDatabaseUrl(t), REDIS_URL: await requireRedis(), AUTH_REDIS_KEY_PREFIX: await freshRedisPrefix(t) }
  const account = { AUTH_BOOTSTRAP_USERNAME: 'otel-off', AUTH_BOOTSTRAP_PASSWORD: 'otel off pw 1' }
  const dir = await tempDir(t, 'ats-modules-')

  /** Starts the service, logs in and authenticates, stops it (SIGTERM); its modules and its output. */
  const serveOnce = async (name: string, env: Record<string, string>): Promise<{ modules: string[], output: string }> => {
    const record = join(dir, `${name}.txt`)
    const service = await startService(t, { ...backends, ...account, LOG_LEVEL: 'info', ATS_RECORD_MODULES: record, ...env }, { nodeArgs: ['--import', RECORDER] })
    const login = await fetch(`${service.baseUrl}/auth/Login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'otel-off', password: 'otel off pw 1' }) })
    const { token } = await login.json() as { token: string }
    const authenticate = await fetch(`${service.baseUrl}/auth/Authenticate/${token}`)
    t.equal(authenticate.status, 200, `${name}: Authenticate works`)
    t.same(await service.stop('SIGTERM'), { code: 0, signal: null }, `${name}: stopped cleanly`)
    return { modules: (await readFile(record, 'utf8')).split('\n').filter((line) => line !== ''), output: service.output() }
  }

  const off = await serveOnce('off', {})
  t.ok(off.modules.some((m) => /[/\\]node_modules[/\\]ioredis[/\\]/.test(m)), `off: the recording sees the drivers (${off.modules.length} modules)`)
  t.ok(off.modules.some((m) => m.includes('/dist/logging/access-log.js')), 'off: and the service\'s own modules')
  t.same(off.modules.filter((m) => OPENTELEMETRY.test(m) || /[/\\]dist[/\\]tracing[/\\](?:start|requests)\.js$/.test(m)), [], 'off: nothing of OpenTelemetry is loaded')
  t.notMatch(off.output, /"traceId"/, 'off: no trace id in the access log')

  // On, with a batch delay far beyond the test: the spans can only arrive through the flush at SIGTERM.
  const receiver = await startOtlpReceiver(t)
  const on = await serveOnce('on', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '600000' })
  for (const part of ['@opentelemetry/sdk-trace-base', '@opentelemetry/instrumentation-ioredis', 'import-in-the-middle']) {
    t.ok(on.modules.some((m) => m.includes(`/node_modules/${part}/`)), `on: ${part} is loaded`)
  }
  t.ok(on.modules.some((m) => m.endsWith('/dist/tracing/requests.js')), 'on: the request spans\' hooks are loaded')
  t.ok(receiver.spans().some((s) => s.attributes['http.route'] === '/auth/Login'), 'on: the buffered spans were exported when the service stopped')
  t.match(on.output, /"traceId":"[0-9a-f]{32}"/, 'on: the trace id in the access log')

  // The documented way to trace fewer requests: the standard sampler variables. Ratio 0, no caller's trace: no span at all.
  const sampledOut = await startOtlpReceiver(t)
  const fewer = await serveOnce('sampled out', { OTEL_EXPORTER_OTLP_ENDPOINT: sampledOut.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' })
  t.same(sampledOut.spans().map((s) => s.name), [], 'sampled out: Login and Authenticate exported no span')
  t.match(fewer.output, /"route":"\/auth\/Login"/, 'sampled out: the requests were logged')

  // The default protocol: OTLP protobuf.
  const protobuf = await startOtlpReceiver(t)
  await serveOnce('protobuf', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${protobuf.endpoint}/v1/traces` })
  t.ok(protobuf.bodies().length > 0 && protobuf.undecoded() === protobuf.bodies().length, `protobuf by default (${protobuf.bodies().length} bodies, not JSON)`)
  t.equal(protobuf.contentTypes()[0], 'application/x-protobuf')
})
