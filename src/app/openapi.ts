import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import { EXAMPLE_PASSWORD, EXAMPLE_TOKEN, EXAMPLE_USERNAME } from '../core/schemas.js'

/**
 * The OpenAPI 3.1 document, generated from the routes' TypeBox schemas. Registered
 * before the routes (it collects them as they are added); the 405 fallbacks are
 * hidden, being the absence of an operation rather than one.
 */
type Schema = { type?: string, properties?: Record<string, unknown>, description?: string, required?: string[] }
type Media = { schema?: Schema, example?: unknown, examples?: Record<string, { summary?: string, value: unknown }> }
type Operation = {
  parameters?: Array<{ in: string, name: string }>
  requestBody?: { required?: boolean, content?: Record<string, Media> }
  responses?: Record<string, { description?: string, content?: Record<string, unknown> }>
}
type Document = { paths?: Record<string, Record<string, Operation>> }

const STATUS_BODY = { type: 'object', properties: { status: { type: 'integer' }, message: { type: 'string' } }, required: ['status', 'message'] }

/**
 * What a person fills in a body, by path: the parameters that make the operation work, with
 * an example of each. (Swagger UI sends every field of a form, empty or pre-filled, and a body
 * value wins over the query: a field for each optional parameter would send text nobody typed.)
 */
const BODY_EXAMPLES: Record<string, Record<string, string>> = {
  '/auth/Login': { username: EXAMPLE_USERNAME, password: EXAMPLE_PASSWORD },
  '/auth/Authenticate': { token: EXAMPLE_TOKEN },
  // The token is in the path: a body carries only the other parameters.
  '/auth/Authenticate/{token}': { format: 'json' },
  '/auth/Logout': { token: EXAMPLE_TOKEN },
  '/auth/introspect': { token: EXAMPLE_TOKEN },
  '/auth/Password': { current_password: EXAMPLE_PASSWORD, new_password: 'a new and longer passphrase' }
}

/**
 * A request body as /docs offers it. JSON first, pre-filled with `{}`: Swagger UI always sends
 * the body it shows and a body value wins over the query, so an example pair there would
 * override the query fields a person filled in (Execute answered 701 with what they typed).
 * The real-looking pair is the second JSON example; a form body with the usual fields follows.
 */
function documentBody (path: string, body: NonNullable<Operation['requestBody']>): void {
  const json = body.content?.['application/json']
  const schema = json?.schema
  if (json === undefined || schema === undefined) return
  body.required = false
  const example = BODY_EXAMPLES[path] ?? {}
  const fields = Object.keys(example)
  json.examples = {
    none: { summary: 'No body: the query fields above are used', value: {} },
    ...(fields.length === 0 ? {} : { pair: { summary: `A body with ${fields.join(' and ')}`, value: example } })
  }
  delete json.example
  const properties = Object.fromEntries(Object.entries(example).map(([name, value]) => {
    const property = schema.properties?.[name]
    return [name, { ...(typeof property === 'object' ? property : {}), examples: [value] }]
  }))
  const form: Media = {
    schema: { type: 'object', description: 'The same parameters as the JSON body, form-encoded; the usual ones are shown.', properties }
  }
  body.content = { 'application/json': json, 'application/x-www-form-urlencoded': form }
}

/**
 * Login as /docs offers it: the credentials in a form body first, JSON second, and
 * no query fields for them. The query string still works (the contract keeps it) but puts the
 * password in a URL, where proxies and access logs keep it: the description names it as the
 * legacy way, and the generated curl never shows it. The form's fields start empty.
 */
function documentLoginBody (operation: Operation): void {
  const body = operation.requestBody
  const json = body?.content?.['application/json']
  const schema = json?.schema
  if (body === undefined || json === undefined || schema === undefined) return
  operation.parameters = operation.parameters?.filter((p) => !(p.in === 'query' && BODY_FIELDS.has(p.name)))
  // An empty example: without one Swagger UI fills each field with a sample made from its pattern.
  const properties = Object.fromEntries([...BODY_FIELDS].map((name) => {
    const property = schema.properties?.[name]
    return [name, { ...(typeof property === 'object' ? property : { type: 'string' }), examples: [''] }]
  }))
  body.required = true
  json.examples = { pair: { summary: 'A JSON body with username and password', value: BODY_EXAMPLES['/auth/Login'] } }
  delete json.example
  body.content = {
    'application/x-www-form-urlencoded': {
      schema: { type: 'object', description: 'username and password (and otp for an account with a second factor), form-encoded (what an HTML form sends)', properties, required: [...CREDENTIALS] }
    },
    'application/json': json
  }
}
const CREDENTIALS: ReadonlySet<string> = new Set(['username', 'password'])
/** The form's fields, none of them offered in the query: the credentials and the second factor's code. */
const BODY_FIELDS: ReadonlySet<string> = new Set([...CREDENTIALS, 'otp'])

/**
 * What the route schemas cannot say by themselves: bodies are optional and may be a form or
 * JSON, Authenticate may answer as a padding function, readiness may answer 503.
 */
function completeDocument (document: Document): Document {
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      if (path === '/auth/Login') documentLoginBody(operation)
      else if (operation.requestBody !== undefined) documentBody(path, operation.requestBody)
      // A path segment wins over the query parameter of its name: no field for the one never read.
      const inPath = new Set(operation.parameters?.filter((p) => p.in === 'path').map((p) => p.name))
      operation.parameters = operation.parameters?.filter((p) => !(p.in === 'query' && inPath.has(p.name)))
      const ok = operation.responses?.['200']
      if (ok?.description === 'Default Response') ok.description = 'Success: status 0'
      if (path.startsWith('/auth/Authenticate') && ok?.content !== undefined) {
        ok.content['application/javascript'] = {
          schema: { type: 'string', examples: ['function onAuth() {return {"status":0,"message":"Success"};}'] }
        }
      }
      if (path === '/health/ready') {
        operation.responses = {
          ...operation.responses,
          503: {
            description: 'Not ready: the checks name what failed',
            content: { 'application/json': { schema: STATUS_BODY, example: { status: 503, message: 'Service Unavailable', checks: { redis: 'down', postgres: 'ok', accepting: 'yes' } } } }
          }
        }
      }
    }
  }
  return document
}

export async function registerOpenApi (app: FastifyInstance, version: string): Promise<void> {
  await app.register(fastifySwagger, {
    transformObject: (documentObject) => {
      if (!('openapiObject' in documentObject)) return documentObject.swaggerObject
      const document = documentObject.openapiObject
      completeDocument(document as Document)
      return document
    },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'auth-token-service',
        version,
        description: 'Login trades a username and password for a token (12 h; 24 h for federated accounts); ' +
          'Authenticate says whether a token is active; Logout ends one at once. Every error is a status-message ' +
          'object `{"status": <int>, "message": <string>}`, and a 400 adds `detail`, what is wrong with the request; ' +
          'each operation lists its answers with an example. The token may also come as the AuthToken1 cookie, which ' +
          'Login sets (in this page too). See docs/api.md for the full error table.'
      },
      tags: [
        { name: 'tokens', description: 'Login, Authenticate, Logout (token services v1.4)' },
        { name: 'sessions', description: 'The caller\'s own sessions and password, with the caller\'s token: list, end one, end the others, change the password' },
        { name: 'keys', description: 'The caller\'s own API keys, with the caller\'s Login token: list, make, end one (docs/machine-credentials.md)' },
        { name: 'operations', description: 'Health, metrics and the revocation feed' },
        { name: 'gateways', description: 'For gateways and API clients: forward-auth (/auth/verify) and OAuth 2.0 introspection (RFC 7662)' }
      ]
    }
  })
}

/** /openapi.json and the interactive reference at /docs, once every route is in place. */
export async function registerOpenApiRoutes (app: FastifyInstance): Promise<void> {
  app.get('/openapi.json', { schema: { hide: true }, logLevel: 'silent' }, async () => app.swagger())
  await app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    uiConfig: { deepLinking: true, tryItOutEnabled: false },
    staticCSP: false
  })
}
