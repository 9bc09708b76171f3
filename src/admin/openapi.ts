import type { FastifyInstance, RouteOptions } from 'fastify'
import { PACKAGE_VERSION } from '../config/version.js'

/**
 * The admin API's own OpenAPI document (GET /admin/openapi.json), collected from its routes'
 * TypeBox schemas as they are added. Its own, not the public one's: the public reference
 * (/openapi.json, /docs) describes what clients of the service call, and must not show the
 * operations only the operator's side reaches.
 */

type JsonSchema = { properties?: Record<string, object>, required?: string[] } & Record<string, unknown>

interface Operation {
  summary: string
  security: Array<Record<string, string[]>>
  parameters: object[]
  requestBody?: object
  responses: Record<string, object>
}

export interface AdminDocument {
  /** Adds every route registered from now on in `app`'s scope (call before the routes). */
  collect (app: FastifyInstance): void
  document (): object
}

function parameters (where: 'path' | 'query', schema: JsonSchema | undefined): object[] {
  return Object.entries(schema?.properties ?? {}).map(([name, property]) => ({
    in: where, name, required: where === 'path' || (schema?.required ?? []).includes(name), schema: property
  }))
}

export function createAdminDocument (): AdminDocument {
  const paths: Record<string, Record<string, Operation>> = {}
  const add = (route: RouteOptions): void => {
    const schema = route.schema as { summary?: string, params?: JsonSchema, querystring?: JsonSchema, body?: JsonSchema, response?: Record<string, object>, hide?: boolean } | undefined
    if (schema === undefined || schema.hide === true) return
    const path = route.url.replace(/:(\w+)/g, '{$1}').replace(/\/$/, '')
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    for (const method of methods) {
      const operation: Operation = {
        summary: schema.summary ?? '',
        security: [{ adminKey: [] }],
        parameters: [...parameters('path', schema.params), ...parameters('query', schema.querystring)],
        responses: Object.fromEntries(Object.entries(schema.response ?? {}).map(([status, body]) => [status, {
          description: (body as { description?: string }).description ?? '',
          content: { 'application/json': { schema: body } }
        }]))
      }
      if (schema.body !== undefined) operation.requestBody = { required: true, content: { 'application/json': { schema: schema.body } } }
      paths[path] = { ...paths[path], [method.toLowerCase()]: operation }
    }
  }
  return {
    collect (app) { app.addHook('onRoute', add) },
    document: () => ({
      openapi: '3.1.0',
      info: {
        title: 'auth-token-service admin API',
        version: PACKAGE_VERSION,
        description: 'Account, session and audit administration on the internal listener (docs/administration.md). ' +
          'Every request needs Authorization: Bearer <AUTH_ADMIN_KEY>.'
      },
      components: { securitySchemes: { adminKey: { type: 'http', scheme: 'bearer', description: 'AUTH_ADMIN_KEY, or the contents of AUTH_ADMIN_KEY_FILE' } } },
      paths
    })
  }
}
