import t from 'tap'
import { buildTestApp } from '../support/app.js'

/*
 * Forms are accepted wherever JSON is: a form value is always a string, so a body field that
 * JSON sends as a number or a boolean (`expires_in_days`) is taken from a form as its digits, and
 * a value that is none is a 400 whose detail names the field, as every other route's are.
 */

const PASSWORD = 'a long enough passphrase 1'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const JSON_BODY = { 'content-type': 'application/json' }
const DAY_MS = 86_400_000

const { app, addUser } = await buildTestApp(t, 'embedded')
await addUser('forms', PASSWORD)
const login = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: new URLSearchParams({ username: 'forms', password: PASSWORD }).toString() })
const token = login.json<{ token: string }>().token
const caller = { authorization: `Bearer ${token}` }

const lifeDays = (body: { key: { created: string, expiration_date: string } }): number =>
  (Date.parse(`${body.key.expiration_date}Z`) - Date.parse(`${body.key.created}Z`)) / DAY_MS

t.test('POST /auth/keys by a form: expires_in_days=7 makes a key of 7 days', async (t) => {
  const made = await app.inject({
    method: 'POST',
    url: '/auth/keys',
    headers: { ...caller, ...FORM },
    payload: new URLSearchParams({ name: 'by a form', expires_in_days: '7', current_password: PASSWORD }).toString()
  })
  t.equal(made.statusCode, 200, made.body)
  const body = made.json<{ status: number, secret: string, key: { created: string, expiration_date: string } }>()
  t.equal(body.status, 0)
  t.match(body.secret, /^atsk_/)
  t.equal(Math.round(lifeDays(body)), 7, 'its life is the 7 days asked for')
})

t.test('a bad value, by a form or JSON: 400 naming the field, never "request is not valid"', async (t) => {
  const cases: Array<[string, Record<string, string>, string, string]> = [
    ['form: not a number', FORM, new URLSearchParams({ name: 'k', expires_in_days: 'seven', current_password: PASSWORD }).toString(), 'expires_in_days must be a whole number'],
    ['form: a fraction', FORM, new URLSearchParams({ name: 'k', expires_in_days: '7.5', current_password: PASSWORD }).toString(), 'expires_in_days must be a whole number'],
    ['form: empty', FORM, new URLSearchParams({ name: 'k', expires_in_days: '', current_password: PASSWORD }).toString(), 'expires_in_days must be a whole number'],
    ['form: an exponent', FORM, new URLSearchParams({ name: 'k', expires_in_days: '1e2', current_password: PASSWORD }).toString(), 'expires_in_days must be a whole number'],
    ['form: given twice', FORM, `name=k&expires_in_days=7&expires_in_days=8&current_password=${encodeURIComponent(PASSWORD)}`, 'expires_in_days given more than once'],
    ['form: no name', FORM, new URLSearchParams({ expires_in_days: '7', current_password: PASSWORD }).toString(), 'name is required'],
    ['JSON: the days as a string', JSON_BODY, JSON.stringify({ name: 'k', expires_in_days: '7', current_password: PASSWORD }), 'expires_in_days must be a whole number'],
    ['JSON: a fraction', JSON_BODY, JSON.stringify({ name: 'k', expires_in_days: 7.5, current_password: PASSWORD }), 'expires_in_days must be a whole number'],
    ['JSON: a number for the name', JSON_BODY, JSON.stringify({ name: 7, current_password: PASSWORD }), 'name must be a string']
  ]
  for (const [what, headers, payload, detail] of cases) {
    const res = await app.inject({ method: 'POST', url: '/auth/keys', headers: { ...caller, ...headers }, payload })
    t.equal(res.statusCode, 400, `${what}: 400`)
    t.same(res.json(), { status: 400, message: 'Bad Request', detail }, `${what}: ${detail}`)
  }
  const tooMany = await app.inject({ method: 'POST', url: '/auth/keys', headers: { ...caller, ...FORM }, payload: new URLSearchParams({ name: 'k', expires_in_days: '100000', current_password: PASSWORD }).toString() })
  t.match(tooMany.json(), { status: 400, detail: /^expires_in_days must be a whole number from 1 to \d+$/ }, 'form: out of range, as JSON is told')
})

interface BodySchema { properties?: Record<string, { type?: string }>, required?: string[] }
type Document = { paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: BodySchema }> } }>> }

t.test('every operation with a number or boolean body field takes it from a form, and names it when it is bad', async (t) => {
  await app.ready()
  const document = app.swagger() as unknown as Document
  let typed = 0
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const schema = operation.requestBody?.content?.['application/json']?.schema
      const properties = Object.entries(schema?.properties ?? {})
      const sample = (type: string | undefined): string => type === 'integer' || type === 'number' ? '1' : type === 'boolean' ? 'true' : 'x'
      for (const [field, property] of properties) {
        if (property.type !== 'integer' && property.type !== 'number' && property.type !== 'boolean') continue
        typed++
        const url = path.replace(/\{[^}]+\}/g, 'AAAAAAAAAAAAAAAA')
        const fields = Object.fromEntries(properties.filter(([name]) => name !== 'token').map(([name, p]) => [name, sample(p.type)]))
        const what = `${method.toUpperCase()} ${path} ${field}`
        // No token: a body that passes validation reaches the route, which refuses the caller (not a 400).
        const good = await app.inject({ method: method.toUpperCase() as 'POST', url, headers: FORM, payload: new URLSearchParams(fields).toString() })
        t.not(good.statusCode, 400, `${what}: a form's "${fields[field]}" is taken (${good.body})`)
        const bad = await app.inject({ method: method.toUpperCase() as 'POST', url, headers: FORM, payload: new URLSearchParams({ ...fields, [field]: 'not-a-value' }).toString() })
        t.equal(bad.statusCode, 400, `${what}: a bad value is a 400`)
        t.match(bad.json(), { detail: new RegExp(`^${field} `) }, `${what}: naming the field`)
      }
    }
  }
  t.ok(typed > 0, 'the public routes have such fields to check (expires_in_days)')
})
