import t from 'tap'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { buildTestApp } from '../support/app.js'

/*
 * A JSON body holding raw invalid UTF-8 is refused as the same bytes percent-encoded are
 * (before, Fastify decoded them to U+FFFD and Login answered 701 for a name nobody typed).
 */

const KEY = 'admin-key-for-utf8-tests-0123456789abcdef'
const JSON_TYPE = { 'content-type': 'application/json' }
const FORM_TYPE = { 'content-type': 'application/x-www-form-urlencoded' }
/** C1 A1: an overlong encoding of `a`, which UTF-8 forbids. */
const OVERLONG = Buffer.from([0xc1, 0xa1])
const rawJson = (before: string, bytes: Buffer, after: string): Buffer => Buffer.concat([Buffer.from(before), bytes, Buffer.from(after)])

t.test('raw invalid UTF-8 in a JSON body: 400 with detail, as its percent-encoded form is', async (t) => {
  const { app, config, addUser } = await buildTestApp(t, 'embedded', { adminKey: KEY })
  await addUser('élodie', 'right password é')
  const login = async (headers: Record<string, string>, payload: string | Buffer) => await app.inject({ method: 'POST', url: '/auth/Login', headers, payload })

  const raw = await login(JSON_TYPE, rawJson('{"username":"', OVERLONG, 'lice","password":"whatever"}'))
  t.equal(raw.statusCode, 400)
  t.same(raw.json(), { status: 400, message: 'Bad Request', detail: 'body is not valid UTF-8' })
  const encoded = await login(FORM_TYPE, 'username=%C1%A1lice&password=whatever')
  t.equal(encoded.statusCode, 400, 'the percent-encoded form: 400 as well')
  t.same(encoded.json(), { status: 400, message: 'Bad Request', detail: 'username has undecodable percent-encoding' })
  const inPassword = await login(JSON_TYPE, rawJson('{"username":"élodie","password":"right password ', Buffer.from([0xff]), '"}'))
  t.same([inPassword.statusCode, inPassword.json<{ detail: string }>().detail], [400, 'body is not valid UTF-8'], 'in the password too')
  const cut = await login(JSON_TYPE, rawJson('{"username":"élodie","password":"right password ', Buffer.from('é').subarray(0, 1), '"}'))
  t.equal(cut.statusCode, 400, 'half a character')

  const valid = await login(JSON_TYPE, Buffer.from(JSON.stringify({ username: 'élodie', password: 'right password é' })))
  t.equal(valid.statusCode, 200, 'valid UTF-8 still logs in')
  t.equal(valid.json<{ status: number }>().status, 0)
  t.same((await login(JSON_TYPE, '{"username":')).json(), { status: 400, message: 'Bad Request', detail: 'body is not valid JSON, or holds a __proto__ key' }, 'bad JSON as before')
  t.same((await login(JSON_TYPE, '{"__proto__":{"x":1},"username":"a","password":"b"}')).json<{ detail: string }>().detail, 'body is not valid JSON, or holds a __proto__ key', '__proto__ as before')
  t.same((await login(JSON_TYPE, '')).json<{ detail: string }>().detail, 'body is empty but Content-Type is application/json', 'empty as before')

  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => { await internal.close() })
  const admin = await internal.inject({
    method: 'POST',
    url: '/admin/users',
    headers: { ...JSON_TYPE, authorization: `Bearer ${KEY}` },
    payload: rawJson('{"username":"', OVERLONG, 'lice","password":"a long enough passphrase"}')
  })
  t.same([admin.statusCode, admin.json<{ detail: string }>().detail], [400, 'body is not valid UTF-8'], 'the admin API refuses it too')
  const listed = await internal.inject({ method: 'GET', url: '/admin/users', headers: { authorization: `Bearer ${KEY}` } })
  t.same(listed.json<{ users: Array<{ username: string }> }>().users.map((u) => u.username), ['élodie'], 'no account made of it')
})
