import { Validator } from '@seriousme/openapi-schema-validator'
import diagnostics from 'node:diagnostics_channel'
import type { FastifyInstance, HTTPMethods, InjectOptions, RouteOptions } from 'fastify'
import { readFile } from 'node:fs/promises'
import t, { type Test } from 'tap'
import { PASSWORD_MAX_BYTES, USERNAME_MAX_CHARS } from '../../src/core/credentials.js'
import { buildTestApp, type TestApp } from '../support/app.js'

/*
 * The OpenAPI 3.1 document: valid against the 3.1 schema, listing
 * every route the app registers with its methods (the 405 fallbacks and the docs'
 * own routes are hidden on purpose), and for Login, Authenticate and Logout every
 * parameter form and the success and error answers. /docs is the interactive page.
 */

interface Registered { methods: string[], url: string, hidden: boolean }

/**
 * Every route as it is registered: an onRoute hook put on each Fastify instance as it is created,
 * kept by instance, so that an app another test builds meanwhile in this process is not counted.
 */
async function buildRecording (t: Test): Promise<{ testApp: TestApp, routes: Registered[] }> {
  const byInstance = new Map<FastifyInstance, Registered[]>()
  const onInit = (message: unknown): void => {
    const fastify = (message as { fastify: FastifyInstance }).fastify
    const routes: Registered[] = []
    byInstance.set(fastify, routes)
    fastify.addHook('onRoute', (route: RouteOptions) => {
      const schema = route.schema as { hide?: boolean } | undefined
      routes.push({ methods: ([] as HTTPMethods[]).concat(route.method).map(String), url: route.url, hidden: schema?.hide === true })
    })
  }
  diagnostics.subscribe('fastify.initialization', onInit)
  try {
    // With an introspection client, so that endpoint is on (off, every method of it is a 404), and
    // with the internal surfaces on the public port as AUTH_PUBLIC_INTERNALS=true serves them.
    const testApp = await buildTestApp(t, 'real', { publicInternals: true, introspectionClients: [{ id: 'docs', secret: '0123456789abcdef' }] })
    return { testApp, routes: byInstance.get(testApp.app) ?? [] }
  } finally {
    diagnostics.unsubscribe('fastify.initialization', onInit)
  }
}

/** `/auth/Logout/:token` as OpenAPI writes it: `/auth/Logout/{token}`. */
const openApiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')

interface Parameter { in: string, name: string, required?: boolean, schema?: unknown, description?: string }
interface Operation {
  summary?: string
  description?: string
  tags?: string[]
  parameters?: Parameter[]
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> }
  responses: Record<string, { description: string, headers?: Record<string, unknown>, content?: Record<string, { schema: { properties?: Record<string, unknown>, required?: string[] } }> }>
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

/** The browser sign-in's pages, their files and their script's endpoints: for a browser, not the API (docs/browser-sign-in.md). */
const BROWSER_PAGES = new Set([
  'GET /auth/signin', 'POST /auth/signin', 'POST /auth/signin/code', 'GET /auth/signout', 'POST /auth/signout',
  'GET /auth/signin/assets/signin.css', 'GET /auth/signin/assets/signin.js', 'GET /auth/signin/assets/webauthn.js',
  'POST /auth/signin/passkey/options', 'POST /auth/signin/passkey', 'POST /auth/passkeys/options', 'POST /auth/passkeys',
  'POST /auth/passkeys/:id/delete', 'GET /auth/signin/assets/icon.svg', 'GET /favicon.ico',
  'POST /auth/account/sessions/end-others', 'POST /auth/account/sessions/:id/end', 'POST /auth/account/password',
  'POST /auth/account/totp', 'POST /auth/account/totp/confirm', 'POST /auth/account/totp/remove',
  'POST /auth/account/keys', 'POST /auth/account/keys/:id/revoke'
])

t.test('the hidden routes are the 405 fallbacks, the legacy Login without a password, the other methods of forward-auth, the browser sign-in, the admin console, and the docs themselves', async (t) => {
  const hidden = routes.filter((route) => route.hidden)
  t.ok(hidden.some((route) => route.url === '/auth/signin'), 'the sign-in page is among them')
  for (const route of hidden) {
    if (route.url === '/openapi.json' || route.url === '/docs' || route.url.startsWith('/docs/')) continue
    if (route.methods.every((method) => BROWSER_PAGES.has(`${method} ${route.url}`))) continue
    // The admin console's pages and forms (docs/console.md): for a person in a browser, not the API.
    if (/^\/console(\/|$)/.test(route.url) && route.methods.every((method) => method === 'GET' || method === 'POST')) continue
    if (route.url.startsWith('/auth/verify')) {
      // Forward-auth takes every method on every sub-path (documented once, as GET /auth/verify).
      const method = route.methods.find((m) => m !== 'QUERY') ?? 'GET'
      t.equal((await app.inject({ method: method as InjectOptions['method'], url: route.url.replace('*', 'any/path') })).statusCode, 401, `${method} ${route.url}: forward-auth, not a fallback`)
      continue
    }
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
    t.ok(login?.requestBody?.content['application/json']?.schema.properties?.[name], `JSON body ${name}`)
  }
  // The credentials in a body: the query form (legacy, the password in a URL) gets no field, so
  // Try it out's request and its generated curl never put the password in the URL (proxies and access logs keep URLs).
  t.same(login?.parameters?.filter((p) => p.in === 'query').map((p) => p.name), ['token'], 'the query offers only token (a refresh)')
  t.same(Object.keys(login?.requestBody?.content['application/x-www-form-urlencoded']?.schema.properties ?? {}), ['username', 'password', 'otp'], 'a form body with both, and the second factor\'s otp')
  t.match(login?.description, /query string works too, as the legacy way/, 'the query form is named as the legacy way')
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

/** The errors each operation documents (docs/api.md, Answers), 401 being Login Failed with body status 701. */
const ERRORS: Record<string, string[]> = {
  'post /auth/Login': ['400', '401', '404', '405', '413', '415', '429', '503'],
  'post /auth/Login/{username}/{password}': ['400', '401', '404', '405', '413', '415', '429', '503'],
  'get /auth/Authenticate': ['400', '403', '404', '405', '503'],
  'get /auth/Authenticate/{token}': ['400', '403', '404', '405', '503'],
  'post /auth/Authenticate': ['400', '403', '404', '405', '413', '415', '503'],
  'post /auth/Authenticate/{token}': ['400', '403', '404', '405', '413', '415', '503'],
  'post /auth/Logout': ['400', '403', '404', '405', '413', '415', '503'],
  'post /auth/Logout/{token}': ['400', '403', '404', '405', '413', '415', '503']
}
const MESSAGES: Record<string, string> = {
  400: 'Bad Request',
  401: 'Login Failed',
  403: 'Unauthorized',
  404: 'Not Found',
  405: 'Method Not Allowed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  503: 'Service Unavailable'
}

interface Media { schema?: { properties?: Record<string, { maxLength?: number, minLength?: number, examples?: unknown[] }> }, example?: unknown, examples?: Record<string, { summary?: string, value: unknown }> }

t.test('each error an operation gives is documented with its own example body', async (t) => {
  for (const [key, statuses] of Object.entries(ERRORS)) {
    const [method = '', path = ''] = key.split(' ')
    const responses = doc.paths[path]?.[method]?.responses ?? {}
    for (const status of statuses) {
      const response = responses[status]
      const media = response?.content?.['application/json'] as Media | undefined
      const example = media?.example as { status?: number, message?: string, detail?: string } | undefined
      t.ok(response?.description !== undefined && response.description.length > 20, `${key} ${status}: says when`)
      t.equal(example?.status, status === '401' ? 701 : Number(status), `${key} ${status}: the example's status`)
      t.equal(example?.message, MESSAGES[status], `${key} ${status}: the example's message`)
      if (status === '400') t.match(example?.detail, /^[a-z_A-Z][\w ]+ (is|given|must|has|contains)\b/, `${key} 400: the example has a detail`)
      else t.equal(example?.detail, undefined, `${key} ${status}: no detail`)
    }
    t.match(responses['405'], { headers: { Allow: {} } }, `${key} 405: the Allow header`)
    if (statuses.includes('429')) t.match(responses['429'], { headers: { 'Retry-After': {} } }, `${key} 429: the Retry-After header`)
  }
  const zeroes = Object.entries(doc.paths).flatMap(([path, operations]) => Object.entries(operations).flatMap(([method, operation]) =>
    Object.entries(operation.responses).filter(([status, response]) => status !== '200' && (response.content?.['application/json'] as Media | undefined)?.example !== undefined &&
      ((response.content?.['application/json'] as Media).example as { status?: number }).status === 0).map(([status]) => `${method} ${path} ${status}`)))
  t.same(zeroes, [], 'no error example shows status 0')
  const login = doc.paths['/auth/Login']?.post?.responses['200']?.content?.['application/json'] as Media | undefined
  t.match(login?.example, { status: 0, message: 'Success', token: /^2[A-Za-z0-9_-]{45}$/, expiration_date: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/ }, 'the Login success example looks like one')
})

t.test('Try it out starts from fields a person fills: nothing pre-filled that would be sent unasked', async (t) => {
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const parameter of operation.parameters ?? []) {
        t.notOk('example' in parameter || 'examples' in parameter, `${method} ${path}: ${parameter.in} ${parameter.name} is not pre-filled`)
      }
      const content = operation.requestBody?.content as Record<string, Media> | undefined
      if (content === undefined || path === '/auth/Login') continue
      t.same(Object.keys(content), ['application/json', 'application/x-www-form-urlencoded'], `${method} ${path}: JSON first, then a form`)
      const examples = Object.values(content['application/json']?.examples ?? {})
      t.same(examples[0]?.value, {}, `${method} ${path}: the body first shown adds nothing to the query fields`)
    }
  }
  // Login: a form first, its fields empty (what is sent is what the person typed), then JSON.
  const login = doc.paths['/auth/Login']?.post?.requestBody?.content as Record<string, Media>
  t.same(Object.keys(login), ['application/x-www-form-urlencoded', 'application/json'], 'Login: a form first, then JSON')
  const form = login['application/x-www-form-urlencoded']?.schema?.properties as Record<string, object> | undefined
  t.same(Object.keys(form ?? {}), ['username', 'password', 'otp'], 'Login\'s form: a username field, a password field and the second factor\'s otp')
  for (const [name, property] of Object.entries(form ?? {})) t.match(property, { examples: [''] }, `Login's form ${name} starts empty`)
  const pair = Object.values(login['application/json']?.examples ?? {})[0]?.value
  t.match(pair, { username: /^[a-z]+$/, password: /^[a-z ]{8,}$/ }, 'Login\'s JSON example is a real-looking pair')
})

t.test('the limits in the document are docs/api.md\'s and the code\'s', async (t) => {
  const answers = await readFile(new URL('../../docs/api.md', import.meta.url), 'utf8')
  const usernameMax = Number(/username over (\d+) characters/.exec(answers)?.[1])
  const passwordMax = Number(/password over (\d+) bytes/.exec(answers)?.[1])
  t.equal(usernameMax, USERNAME_MAX_CHARS, 'docs/api.md\'s username limit is the code\'s')
  t.equal(passwordMax, PASSWORD_MAX_BYTES, 'docs/api.md\'s password limit is the code\'s')
  const login = doc.paths['/auth/Login']?.post
  const legacy = doc.paths['/auth/Login/{username}/{password}']?.post
  const content = login?.requestBody?.content as Record<string, Media> | undefined
  const body = content?.['application/json']?.schema?.properties
  const form = content?.['application/x-www-form-urlencoded']?.schema?.properties as typeof body
  const places: Array<[string, { maxLength?: number, minLength?: number } | undefined, { maxLength?: number, minLength?: number } | undefined]> = [
    ['form body', form?.username, form?.password],
    ['JSON body', body?.username, body?.password],
    ['path', param(legacy, 'path', 'username')?.schema as object, param(legacy, 'path', 'password')?.schema as object]
  ]
  for (const [where, username, password] of places) {
    // Query and body values may be empty in the schema: a body value wins over an empty query one
    // (contract), and an empty value that is used is refused by the service with the same detail.
    const minLength = where === 'path' ? 1 : undefined
    t.match(username, { minLength, maxLength: usernameMax }, `${where}: username 1–${usernameMax} characters`)
    // A password over 1024 characters is over 1024 bytes; the byte limit itself is the code's, before hashing.
    t.match(password, { minLength, maxLength: passwordMax }, `${where}: password at most ${passwordMax} characters`)
  }
  t.match(form?.password, { description: new RegExp(`1–${passwordMax} bytes`) }, 'the password\'s byte limit is said')
})

t.test('forward-auth is documented: any method, its identity headers, 401 with a challenge, 503', async (t) => {
  const verify = doc.paths['/auth/verify']?.get
  t.match(verify?.description, /Any method/, 'says any method and sub-path')
  t.match(verify?.responses['200'], { headers: { 'X-Auth-User': {}, 'X-Auth-Account-Id': {}, 'X-Auth-Federated': {}, 'X-Auth-Expires': {} } }, '200: the identity headers')
  t.match(verify?.responses['401'], { headers: { 'WWW-Authenticate': {} } }, '401: the challenge')
  t.ok(verify?.responses['503'] !== undefined, '503 documented')
})

t.test('introspection is documented: the form token, the RFC 7662 answer, 401 with a Basic challenge', async (t) => {
  const introspect = doc.paths['/auth/introspect']?.post
  t.match(introspect?.description, /RFC 7662|active/, 'says what it answers')
  t.match(introspect?.responses['200']?.content?.['application/json']?.schema, { properties: { active: {}, sub: {}, username: {}, exp: {}, iat: {}, token_type: {} } }, '200: the RFC fields')
  t.match(introspect?.responses['401'], { headers: { 'WWW-Authenticate': {} } }, '401: the Basic challenge')
  t.ok(introspect?.requestBody !== undefined, 'a request body')
})

t.test('every operation has a summary and a tag', async (t) => {
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      t.ok(typeof operation.summary === 'string' && operation.summary.length > 0, `${method} ${path}: summary`)
      t.ok(operation.tags?.length === 1 && ['tokens', 'sessions', 'keys', 'operations', 'gateways'].includes(operation.tags[0] ?? ''), `${method} ${path}: tagged`)
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

t.test('the document lists what the configuration serves: no introspection when it is off', async (t) => {
  const { app: off } = await buildTestApp(t, 'embedded', { publicInternals: true, introspectionClients: [] })
  const paths = Object.keys((await off.inject({ url: '/openapi.json' })).json<Document>().paths)
  t.notOk(paths.includes('/auth/introspect'), 'off (it answers 404): not listed')
  t.equal((await off.inject({ method: 'POST', url: '/auth/introspect' })).statusCode, 404, 'and it is indeed a 404')
  t.ok(doc.paths['/auth/introspect'], 'on: listed')
})
