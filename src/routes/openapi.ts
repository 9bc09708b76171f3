import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

/**
 * The OpenAPI 3.1 document, generated from the routes' TypeBox schemas. Registered
 * before the routes (it collects them as they are added); the 405 fallbacks are
 * hidden, being the absence of an operation rather than one.
 */
export async function registerOpenApi (app: FastifyInstance, version: string): Promise<void> {
  await app.register(fastifySwagger, {
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
