import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

/**
 * The OpenAPI 3.1 document, generated from the routes' TypeBox schemas. Registered
 * before the routes (it collects them as they are added); the 405 fallbacks are
 * hidden, being the absence of an operation rather than one.
 */
type Operation = {
  requestBody?: { required?: boolean, content?: Record<string, unknown> }
  responses?: Record<string, { description?: string, content?: Record<string, unknown> }>
  security?: Array<Record<string, string[]>>
}
type Document = { paths?: Record<string, Record<string, Operation>> }

const STATUS_BODY = { type: 'object', properties: { status: { type: 'integer' }, message: { type: 'string' } }, required: ['status', 'message'] }
const RESPONSE_DESCRIPTIONS: Record<string, string> = {
  200: 'Success: status 0',
  '4XX': 'A status-message object: 400 Bad Request, 401/701 Login Failed, 403 Unauthorized, 404, 405 (with Allow), 413, 415, 429 (with Retry-After)',
  '5XX': 'A status-message object: 503 Service Unavailable when Redis, Postgres or the directory cannot be reached'
}

/**
 * What the route schemas cannot say by themselves: bodies are optional and may be a form or
 * JSON, the token may come as the AuthToken1 cookie, Authenticate may answer as a padding
 * function, readiness may answer 503.
 */
function completeDocument (document: Document): Document {
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const body = operation.requestBody
      if (body?.content !== undefined) {
        body.required = false
        const json = body.content['application/json']
        if (json !== undefined) body.content['application/x-www-form-urlencoded'] = json
      }
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const description = RESPONSE_DESCRIPTIONS[status]
        if (description !== undefined && response.description === 'Default Response') response.description = description
      }
      if (path.startsWith('/auth/')) operation.security = [{ tokenCookie: [] }, {}]
      if (path.startsWith('/auth/Authenticate')) {
        const ok = operation.responses?.['200']
        if (ok?.content !== undefined) {
          ok.content['application/javascript'] = {
            schema: { type: 'string', examples: ['function onAuth() {return {"status":0,"message":"Success"};}'] }
          }
        }
      }
      if (path === '/health/ready') {
        operation.responses = {
          ...operation.responses,
          503: { description: 'Not ready: the checks name what failed', content: { 'application/json': { schema: STATUS_BODY } } }
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
          'object `{"status": <int>, "message": <string>}`; see the README for the full error table.'
      },
      tags: [
        { name: 'tokens', description: 'Login, Authenticate, Logout (token services v1.4)' },
        { name: 'operations', description: 'Health, metrics and the revocation feed' }
      ],
      components: {
        securitySchemes: {
          tokenCookie: { type: 'apiKey', in: 'cookie', name: 'AuthToken1', description: 'The token, as Login sets it' },
          tokenQuery: { type: 'apiKey', in: 'query', name: 'token' }
        }
      }
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
