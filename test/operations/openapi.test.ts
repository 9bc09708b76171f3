import { Validator } from '@seriousme/openapi-schema-validator'
import diagnostics from 'node:diagnostics_channel'
import type { FastifyInstance, HTTPMethods, InjectOptions, RouteOptions } from 'fastify'
import t, { type Test } from 'tap'
import { buildTestApp, type TestApp } from '../helpers/app.js'

/*
 * The OpenAPI 3.1 document (issue 5, OpenAPI): valid against the 3.1 schema, listing
 * every route the app registers with its methods (the 405 fallbacks and the docs'
 * own routes are hidden on purpose), and for Login, Authenticate and Logout every
 * parameter form and the success and error answers. /docs is the interactive page.
 */

interface Registered { methods: string[], url: string, hidden: boolean }

/** Every route as it is registered: an onRoute hook put on each Fastify instance as it is created. */
async function buildRecording (t: Test): Promise<{ testApp: TestApp, routes: Registered[] }> {
  const routes: Registered[] = []
  const onInit = (message: unknown): void => {
    const fastify = (message as { fastify: FastifyInstance }).fastify
    fastify.addHook('onRoute', (route: RouteOptions) => {
      const schema = route.schema as { hide?: boolean } | undefined
      routes.push({ methods: ([] as HTTPMethods[]).concat(route.method).map(String), url: route.url, hidden: schema?.hide === true })
    })
  }
  diagnostics.subscribe('fastify.initialization', onInit)
  try {
    return { testApp: await buildTestApp(t, 'real'), routes }
  } finally {
    diagnostics.unsubscribe('fastify.initialization', onInit)
  }
}

/** `/auth/Logout/:token` as OpenAPI writes it: `/auth/Logout/{token}`. */
const openApiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')

interface Parameter { in: string, name: string, required?: boolean, schema?: unknown }
interface Operation {
  summary?: string
  description?: string
  tags?: string[]
  parameters?: Parameter[]
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> }
  responses: Record<string, { description: string, content?: Record<string, { schema: { properties?: Record<string, unknown>, required?: string[] } }> }>
}
interface Document {
  openapi: string
  info: { title: string, version: string }
  paths: Record<string, Record<string, Operation>>
}

const { testApp: { app }, routes } = await buildRecording(t)
const response = await app.inject({ url: '/openapi.json' })
const doc = response.json<Document>()

t.test('/openapi.json is a valid OpenAPI 3.1 document', async (t) => {
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /^application\/json/)
  t.equal(doc.openapi, '3.1.0')
  t.match(doc.info, { title: 'auth-token-service', version: /^\d+\.\d+\.\d+/ })
  const validator = new Validator()
  const result = await validator.validate(doc as unknown as Record<string, unknown>)
  t.equal(validator.version, '3.1', 'validated as 3.1')
  t.same(result.errors, undefined, 'no schema errors')
  t.equal(result.valid, true)
  t.same((await app.inject({ url: '/docs/json' })).json(), doc, '/docs/json serves the same document')
})

t.test('every route the app registers is in the document, with its methods, and nothing else is', async (t) => {
  t.ok(routes.length > 20, `routes recorded (${routes.length})`)
  const visible = routes.filter((route) => !route.hidden)
  const expected = new Set<string>()
  for (const route of visible) {
    for (const method of route.methods) {
      const key = `${method.toLowerCase()} ${openApiPath(route.url)}`
      expected.add(key)
      t.ok(doc.paths[openApiPath(route.url)]?.[method.toLowerCase()] !== undefined, `documented: ${method} ${route.url}`)
    }
  }
  const documented = new Set(Object.entries(doc.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`)))
  t.same([...documented].sort(), [...expected].sort(), 'the document lists exactly the visible routes')
  for (const must of ['post /auth/Login', 'post /auth/Login/{username}/{password}', 'get /auth/Authenticate', 'post /auth/Authenticate',
    'get /auth/Authenticate/{token}', 'post /auth/Authenticate/{token}', 'post /auth/Logout', 'post /auth/Logout/{token}',
    'get /auth/revocations', 'get /health/live', 'get /health/ready', 'get /metrics']) {
    t.ok(documented.has(must), `${must} is in it`)
  }
})

t.test('the hidden routes are the 405 fallbacks, the legacy Login without a password, and the docs themselves', async (t) => {
  const hidden = routes.filter((route) => route.hidden)
  for (const route of hidden) {
    if (route.url === '/openapi.json' || route.url === '/docs' || route.url.startsWith('/docs/')) continue
    const path = route.url.replace(/:[A-Za-z0-9_]+/g, 'x')
    if (route.url === '/auth/Login/:username' && route.methods.includes('POST')) {
      t.equal((await app.inject({ method: 'POST', url: path })).statusCode, 400, 'POST /auth/Login/{username}: the missing password is a 400')
      continue
    }
    const method = route.methods.find((m) => m === 'DELETE') ?? route.methods.find((m) => m !== 'QUERY') ?? 'DELETE'
    const answer = await app.inject({ method: method as InjectOptions['method'], url: path })
    t.equal(answer.statusCode, 405, `${route.methods.join(',')} ${route.url}: a 405 fallback`)
    t.type(answer.headers.allow, 'string', 'naming the allowed methods')
  }
})

const param = (operation: Operation | undefined, where: string, name: string): Parameter | undefined =>
  operation?.parameters?.find((p) => p.in === where && p.name === name)

function assertAnswers (t: Test, operation: Operation | undefined, what: string, successFields: string[]): void {
  const responses = operation?.responses ?? {}
  const ok = responses['200']?.content?.['application/json']?.schema
  t.ok(ok !== undefined, `${what}: 200 documented`)
  for (const field of successFields) t.ok(ok?.properties?.[field] !== undefined, `${what}: 200 has ${field}`)
  for (const range of ['4XX', '5XX']) {
    const error = responses[range]?.content?.['application/json']?.schema
    t.ok(error !== undefined, `${what}: ${range} documented`)
    t.same(error?.required?.slice().sort(), ['message', 'status'], `${what}: ${range} is the status-message object`)
  }
}

t.test('Login documents its parameters (query, body, path) and answers', async (t) => {
  const login = doc.paths['/auth/Login']?.post
  t.ok(login?.summary, 'a summary')
  t.same(login?.tags, ['tokens'])
  for (const name of ['username', 'password', 'token']) {
    t.ok(param(login, 'query', name), `query ${name}`)
    t.ok(login?.requestBody?.content['application/json']?.schema.properties?.[name], `body ${name}`)
  }
  assertAnswers(t, login, 'Login', ['status', 'message', 'token', 'AuthToken', 'expiration_date'])

  const legacy = doc.paths['/auth/Login/{username}/{password}']?.post
  t.match(param(legacy, 'path', 'username'), { required: true }, 'path username')
  t.match(param(legacy, 'path', 'password'), { required: true }, 'path password')
  t.ok(param(legacy, 'query', 'token'), 'query token (a refresh)')
  assertAnswers(t, legacy, 'Login, path style', ['token', 'expiration_date'])
})

t.test('Authenticate documents its parameters (query, body, path) and answers', async (t) => {
  const names = ['token', 'format', 'jsonpFunction', 'jsopFunction', 'jsonpFormat', 'callback']
  for (const method of ['get', 'post']) {
    const plain = doc.paths['/auth/Authenticate']?.[method]
    const byPath = doc.paths['/auth/Authenticate/{token}']?.[method]
    for (const name of names) t.ok(param(plain, 'query', name), `${method}: query ${name}`)
    t.match(param(byPath, 'path', 'token'), { required: true }, `${method}: path token`)
    if (method === 'post') {
      for (const name of names) t.ok(plain?.requestBody?.content['application/json']?.schema.properties?.[name], `post: body ${name}`)
    }
    assertAnswers(t, plain, `${method} Authenticate`, ['status', 'message', 'expiration_date', 'account_id', 'username', 'federated'])
    assertAnswers(t, byPath, `${method} Authenticate/{token}`, ['status', 'message', 'expiration_date'])
  }
})

t.test('Logout documents its parameters (query, body, path) and answers', async (t) => {
  const logout = doc.paths['/auth/Logout']?.post
  t.ok(param(logout, 'query', 'token'), 'query token')
  t.ok(logout?.requestBody?.content['application/json']?.schema.properties?.token, 'body token')
  assertAnswers(t, logout, 'Logout', ['status', 'message'])
  const byPath = doc.paths['/auth/Logout/{token}']?.post
  t.match(param(byPath, 'path', 'token'), { required: true }, 'path token')
  assertAnswers(t, byPath, 'Logout/{token}', ['status', 'message'])
})

t.test('every operation has a summary and a tag', async (t) => {
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      t.ok(typeof operation.summary === 'string' && operation.summary.length > 0, `${method} ${path}: summary`)
      t.ok(operation.tags?.length === 1 && ['tokens', 'operations'].includes(operation.tags[0] ?? ''), `${method} ${path}: tagged`)
    }
  }
})

t.test('/docs answers the interactive reference as HTML, with its assets', async (t) => {
  for (const url of ['/docs', '/docs/']) {
    const page = await app.inject({ url })
    t.equal(page.statusCode, 200, url)
    t.match(page.headers['content-type'], /^text\/html/)
    t.match(page.body, /<div id="swagger-ui">/, 'the Swagger UI mount point')
  }
  const initializer = await app.inject({ url: '/docs/static/swagger-initializer.js' })
  t.equal(initializer.statusCode, 200)
  t.match(initializer.body, /json/, 'points the UI at the document')
  for (const asset of ['/docs/static/swagger-ui.css', '/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-ui-standalone-preset.js']) {
    const answer = await app.inject({ url: asset })
    t.equal(answer.statusCode, 200, asset)
    t.ok(answer.rawPayload.length > 1000, `${asset}: served whole`)
  }
})
