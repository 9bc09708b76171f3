import t from 'tap'
import { execFile } from 'node:child_process'
import { connect } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { migrate } from '../../../src/core/migrate.js'
import { buildTestApp } from '../../support/app.js'
import { freshPostgresDatabase, patientPostgres } from '../../../support/postgres.js'
import { cliCommand } from '../../../support/service.js'

/* The smaller findings of a security review, one test each. */

t.test('a padding function may not be named after a global the page relies on', async (t) => {
  const { app, addUser } = await buildTestApp(t, 'embedded')
  await addUser('ann', 'pw')
  const token = (await app.inject({ method: 'POST', url: '/auth/Login', payload: { username: 'ann', password: 'pw' } })).json<{ token: string }>().token
  for (const name of ['alert', 'eval', 'document', 'window', 'location', 'setTimeout', 'Object', 'Function', 'constructor', '__proto__', 'fetch', 'JSON', 'onload', 'toString']) {
    const answer = await app.inject({ method: 'GET', url: `/auth/Authenticate/${token}?jsonpFunction=${name}` })
    t.equal(answer.statusCode, 400, name)
    t.match(answer.json(), { detail: /^padding function name in jsonpFunction is (a reserved word|a global a page relies on)$/ }, `${name}: says why`)
  }
  for (const name of ['onAuth', 'cb', '$', 'handleAuth_2', 'once']) {
    const answer = await app.inject({ method: 'GET', url: `/auth/Authenticate/${token}?callback=${name}` })
    t.equal(answer.body, `function ${name}() {return {"status":0,"message":"Success"};}`, `${name}: allowed`)
  }
})

t.test('a request with two Host headers is a 400 (RFC 9112 §3.2)', async (t) => {
  const { app } = await buildTestApp(t, 'embedded')
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as AddressInfo).port
  const ask = async (headers: string): Promise<string> => await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    socket.on('data', (chunk) => { text += chunk.toString() })
    socket.on('end', () => { resolve(text) })
    socket.on('error', reject)
    socket.write(`GET /auth/Authenticate HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`)
  })
  const two = await ask('Host: auth.example.org\r\nHost: evil.example\r\n')
  t.match(two, /^HTTP\/1\.1 400 /)
  t.match(two, /"detail":"Host header given more than once"/)
  t.match(await ask('Host: auth.example.org, evil.example\r\n'), /^HTTP\/1\.1 400 /, 'two values in one header too')
  t.match(await ask('Host: auth.example.org\r\n'), /^HTTP\/1\.1 403 /, 'one Host: the usual answer')
})

t.test('user list escapes names as events does', async (t) => {
  const url = await freshPostgresDatabase(t)
  const db = patientPostgres(url)
  t.teardown(async () => { await db.close() })
  await migrate(db)
  // Stored before canonical usernames: a name with a newline and tabs, forging a line.
  await db.query('INSERT INTO users (username, password_hash) VALUES ($1, NULL), ($2, NULL)', ['ann', 'mallory\nroot\tlocal\tenabled'])
  const listed = await new Promise<string>((resolve, reject) => {
    execFile(...cliCommand(['user', 'list']), { env: { PATH: process.env.PATH ?? '', DATABASE_URL: url, LOG_LEVEL: 'silent' }, cwd: tmpdir(), encoding: 'utf8' },
      (error, stdout) => { if (error === null) resolve(stdout); else reject(error) })
  })
  t.same(listed.split('\n').filter((line) => line !== ''), ['ann\tlocal\tenabled', 'mallory\\u000aroot\\u0009local\\u0009enabled\tlocal\tenabled'], 'one line per account, three cells each')
})
