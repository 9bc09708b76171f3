import t from 'tap'
import type { FastifyBaseLogger } from 'fastify'
import { pino, type Bindings, type ChildLoggerOptions } from 'pino'
import { accessLineWriter, jsonText, logsInfo, RequestLogger, type AccessEntry, type LogBase } from '../../src/logging/access-log.js'

/** Lines written to it, one string per write. */
function capture (): { writes: string[], write: (line: string) => void } {
  const writes: string[] = []
  return { writes, write: (line) => { writes.push(line) } }
}

const base: LogBase = { pid: 4242, hostname: 'host-1.example' }
const sameTime = (line: string): string => line.replace(/"time":\d+/, '"time":0')

/** The line pino writes for the same entry, the way the access log used to be written. */
function pinoLine (entry: AccessEntry): string {
  const sink = capture()
  const logger = pino({ base }, sink)
  const { reqId, traceId, method, url, remoteAddress, route, statusCode, detail, responseTime } = entry
  logger.child(traceId === undefined ? { reqId } : { reqId, traceId }).info({ req: { method, url, remoteAddress }, route, statusCode, detail, responseTime }, 'request completed')
  return sink.writes.join('')
}

const plain: AccessEntry = { reqId: '9b2c0a4e-0d3f-4f1e-9a57-8c1d2e3f4a5b', method: 'GET', url: '/auth/Authenticate/:token', remoteAddress: '127.0.0.1', route: '/auth/Authenticate/:token', statusCode: 200, responseTime: 0.8123456789 }

t.test('the hand-written line is the one pino writes, byte for byte', async (t) => {
  const entries: AccessEntry[] = [
    plain,
    { ...plain, method: 'POST', url: '/auth/Login?username=ann&password=[redacted]', route: '/auth/Login', statusCode: 401, responseTime: 27 },
    { ...plain, remoteAddress: undefined, url: '/[redacted]', route: '(unmatched)', statusCode: 404, responseTime: 1e-7 },
    { ...plain, reqId: 'caller.id:7', url: '/x\\u000d\\u000ainjected?a="b"', remoteAddress: '::ffff:10.0.0.1', responseTime: 123456.5 },
    { ...plain, responseTime: Number.NaN },
    { ...plain, method: 'POST', url: '/auth/Login?username=ann&password=[redacted]&password=[redacted]', route: '/auth/Login', statusCode: 400, detail: 'password given more than once' },
    { ...plain, statusCode: 400, detail: 'a "quoted" \\ detail\n' },
    { ...plain, statusCode: 400, detail: undefined },
    // Tracing on: the trace id beside the request id, as a pino child bound with both writes it.
    { ...plain, traceId: '4bf92f3577b34da6a3ce929d0e0e4736' }
  ]
  for (const entry of entries) {
    const sink = capture()
    const before = Date.now()
    accessLineWriter(sink, base)(entry)
    t.equal(sink.writes.length, 1, 'one write per line')
    const line = sink.writes[0] ?? ''
    t.equal(sameTime(line), sameTime(pinoLine(entry)), `${entry.method} ${entry.url}`)
    const time = (JSON.parse(line) as { time: number }).time
    t.ok(time >= before && time <= Date.now(), 'time is now, in epoch milliseconds')
  }
})

t.test('user text cannot break the line or forge a field', async (t) => {
  const texts = ['plain', 'quote " and backslash \\', 'cr\rlf\n', 'nel\u0085 del\u007f c1\u009b', 'ls\u2028ps\u2029', 'emoji 😀', 'lone \ud800 surrogate', 'tab\t', '{"level":60}', '']
  for (const [index, text] of texts.entries()) {
    const literal = jsonText(text)
    t.equal(JSON.parse(literal), text, `text ${index} survives`)
    // eslint-disable-next-line no-control-regex
    t.notMatch(literal, /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/, `text ${index}: nothing raw a viewer could split on`)
  }
  const sink = capture()
  accessLineWriter(sink, base)({ ...plain, remoteAddress: 'x\n{"level":60,"msg":"forged"}\u2028', url: '/a"b' })
  const line = sink.writes[0] ?? ''
  t.equal(line.indexOf('\n'), line.length - 1, 'one line')
  const record = JSON.parse(line) as { level: number, req: { remoteAddress: string, url: string } }
  t.equal(record.level, 30)
  t.equal(record.req.remoteAddress, 'x\n{"level":60,"msg":"forged"}\u2028', 'the text is a value, nothing more')
  t.equal(record.req.url, '/a"b')
})

t.test('logsInfo follows pino\'s levels', async (t) => {
  for (const level of ['trace', 'debug', 'info']) t.ok(logsInfo(level), level)
  for (const level of ['warn', 'error', 'fatal', 'silent']) t.notOk(logsInfo(level), level)
})

t.test('RequestLogger: the child is made on the first line, with the bindings and options given', async (t) => {
  const sink = capture()
  const parent = pino({ base, level: 'info' }, sink)
  const made: Array<{ bindings: Bindings, options: ChildLoggerOptions | undefined }> = []
  const counting = Object.create(parent) as FastifyBaseLogger
  counting.child = (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger => {
    made.push({ bindings, options })
    return parent.child(bindings, options)
  }

  const quiet = new RequestLogger(counting, { reqId: 'r1' }, { level: 'silent' })
  t.equal(quiet.level, 'silent', 'the route\'s level before any line')
  const inheriting = new RequestLogger(counting, { reqId: 'r2' }, {})
  t.equal(inheriting.level, 'info', 'else the parent\'s')
  t.equal(made.length, 0, 'no child made yet')

  inheriting.warn({ detail: 1 }, 'something %s', 'odd')
  inheriting.error(new Error('boom'))
  inheriting.debug('below the level: not written')
  t.equal(made.length, 1, 'one child, made once')
  t.same(made[0]?.bindings, { reqId: 'r2' })
  const records = sink.writes.map((line) => JSON.parse(line) as { level: number, reqId: string, msg: string, detail?: number, err?: { message: string } })
  t.equal(records.length, 2, 'two lines at or above info')
  t.match(records[0], { level: 40, reqId: 'r2', detail: 1, msg: 'something odd' }, 'arguments forwarded as given')
  t.match(records[1], { level: 50, reqId: 'r2', err: { message: 'boom' } })

  quiet.error('silenced')
  t.equal(sink.writes.length, 2, 'a silent route writes nothing')
  inheriting.level = 'debug'
  t.equal(inheriting.level, 'debug', 'a level set later applies to the child')
  inheriting.debug('now written')
  t.equal(sink.writes.length, 3)
  const grandchild = inheriting.child({ step: 'x' })
  grandchild.info('nested')
  t.match(JSON.parse(sink.writes[3] ?? '{}'), { reqId: 'r2', step: 'x', msg: 'nested' }, 'child of a request logger keeps the request id')
})
