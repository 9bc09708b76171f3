import t from 'tap'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { buildTestApp } from '../support/app.js'
import { LogCapture, jsonObject } from './support.js'

/*
 * The internal listener writes an access line per request as the public port does:
 * the same fields, the same redaction (a route by its template, secret query values replaced,
 * an unmatched path by its first segment), never a key; marked "listener":"internal".
 */

const KEY = 'admin-key-for-the-access-log-0123456789'

t.test('an access line per internal request, redacted like the public one', async (t) => {
  t.setTimeout(60_000)
  const capture = new LogCapture()
  const { app, config } = await buildTestApp(t, 'embedded', { logLevel: 'info', adminKey: KEY, revocationsKey: 'the-feed-key-0123456789abcdef' }, { logStream: capture })
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  const mark = capture.mark()

  const admin = await internal.inject({ method: 'GET', url: '/admin/users/alice?password=hunter2-secret', remoteAddress: '192.0.2.7', headers: { authorization: `Bearer ${KEY}` } })
  t.equal(admin.statusCode, 404, 'no such account')
  t.equal((await internal.inject({ method: 'GET', url: '/admin/users', headers: { authorization: 'Bearer wrong-key-sent' } })).statusCode, 401)
  await internal.inject({ method: 'GET', url: '/auth/revocations?token=raw-token-in-url', headers: { authorization: 'Bearer feed-key-sent' } })
  await internal.inject({ method: 'GET', url: '/unknown/alice-secret-path' })
  // The same request on the public port, for the shape to compare with.
  await app.inject({ method: 'GET', url: '/auth/Authenticate?token=public-token', remoteAddress: '192.0.2.8' })

  const lines = capture.since(mark)
  const text = lines.join('\n')
  for (const secret of ['hunter2-secret', KEY, 'wrong-key-sent', 'feed-key-sent', 'raw-token-in-url', 'alice-secret-path', 'public-token']) {
    t.notOk(text.includes(secret), `${secret} is not logged`)
  }
  const access = lines.map(jsonObject).filter((line) => line?.msg === 'request completed')
  const internalLines = access.filter((line) => line?.listener === 'internal')
  t.same(internalLines.map((line) => [(line?.req as { url: string }).url, line?.route, line?.statusCode]), [
    ['/admin/users/:username?password=[redacted]', '/admin/users/:username', 404],
    ['/admin/users', '/admin/users', 401],
    ['/auth/revocations?token=[redacted]', '/auth/revocations', 401],
    ['/unknown/[redacted]', '(unmatched)', 404]
  ], 'one line per request: the route template, secret values redacted')
  t.match(internalLines[0], { level: 30, reqId: String, req: { method: 'GET', remoteAddress: '192.0.2.7' }, responseTime: Number }, 'who asked, and how long it took')
  const publicLine = access.find((line) => line?.listener === undefined)
  t.ok(publicLine !== undefined, 'the public port\'s line')
  const keys = (line: Record<string, unknown> | undefined): string[] => Object.keys(line ?? {}).filter((key) => key !== 'listener' && key !== 'detail').sort()
  t.same(keys(internalLines[0]), keys(publicLine), 'the same fields as the public port\'s lines')
})
