import fastifyFormbody from '@fastify/formbody'
import type { FastifyInstance, preValidationHookHandler } from 'fastify'
import { reasons, type Reason } from '../errors/reasons.js'
import { badRequest } from '../errors/status.js'
import { malformedFormReason } from './bad-request.js'
import { MalformedFormError, parseFormEncoded, type FormParams } from './form-encoding.js'

/** Path segments may be long (legacy path-style passwords): the router takes up to this many characters. */
export const MAX_PATH_SEGMENT = 2048

/** What a POST without a body carries, so body schemas can require an object and still allow none. */
export const EMPTY_BODY: Readonly<Record<string, never>> = Object.freeze({})

/**
 * Marks a query string the strict parser refused, with why; the router cannot throw, so the
 * first hook does (refusedQuery). A parsed query holds no symbol key, so looking this up finds nothing.
 */
const REFUSED_QUERY = Symbol('refused query')
type ParsedQuery = FormParams & { [REFUSED_QUERY]?: Reason }

/** The router's query-string parser: the strict form parser, its refusals kept for the first hook. */
export function parseQuery (text: string): ParsedQuery {
  try {
    return parseFormEncoded(text)
  } catch (error) {
    if (!(error instanceof MalformedFormError)) throw error
    return Object.freeze({ [REFUSED_QUERY]: malformedFormReason(error, 'query string') }) as ParsedQuery
  }
}

/** Why the query string of a request was refused, if it was. */
export function refusedQuery (query: unknown): Reason | undefined {
  return (query as ParsedQuery)[REFUSED_QUERY]
}

/**
 * JSON bodies as Fastify parses them (secure-json-parse: a __proto__ key refused), but read as
 * bytes and decoded strictly: Fastify's own parser decodes invalid UTF-8 to U+FFFD, so
 * `{"username":"\xc1\xa1lice"}` reached Login as another name (701) while the same bytes
 * percent-encoded in a form were a 400. Both are a 400 now, with why.
 */
export function registerStrictJson (app: FastifyInstance, bodyLimit: number): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (request, body, done) => {
    let text: string
    try {
      text = utf8.decode(body as Buffer)
    } catch {
      done(badRequest(reasons.bodyNotUtf8()), undefined)
      return
    }
    parseJson(request, text, done)
  })
}

type FieldType = 'integer' | 'boolean'
const FORM = /^application\/x-www-form-urlencoded\b/i
const FORM_INTEGER = /^-?[0-9]{1,15}$/

/** The body fields a form cannot send as JSON does (a form value is text): whole numbers and booleans. */
export function nonStringFields (schema: unknown): ReadonlyMap<string, FieldType> {
  const fields = new Map<string, FieldType>()
  const properties = typeof schema === 'object' && schema !== null && 'properties' in schema ? schema.properties : undefined
  if (typeof properties !== 'object' || properties === null) return fields
  for (const [name, property] of Object.entries(properties)) {
    const type: unknown = typeof property === 'object' && property !== null && 'type' in property ? property.type : undefined
    if (type === 'integer' || type === 'boolean') fields.set(name, type)
  }
  return fields
}

/**
 * A form body's whole numbers and booleans, from their text ("7", "true") to the values the
 * schema checks; any other text stays a string, which the schema then refuses naming the field.
 * JSON bodies are left as they came (a number sent as a string there is the sender's mistake).
 */
function readFormFields (body: unknown, fields: ReadonlyMap<string, FieldType>): void {
  if (typeof body !== 'object' || body === null) return
  const values = body as Record<string, unknown>
  for (const [name, type] of fields) {
    const text = values[name]
    if (typeof text !== 'string') continue
    if (type === 'integer' && FORM_INTEGER.test(text)) values[name] = Number(text)
    else if (type === 'boolean' && (text === 'true' || text === 'false')) values[name] = text === 'true'
  }
}

/**
 * Bodies are form-encoded (by the same strict parser as queries) or JSON: Fastify's own
 * text/plain parser would let a third kind in (415 instead). A request without a body
 * validates as an empty parameter object where the route has a body schema; that hook is
 * added to those routes only, so that the others (GET Authenticate) run no preValidation hook.
 * Forms are taken wherever JSON is: a route whose body has number or boolean fields reads them
 * from a form's text too.
 */
export async function registerBodyParsing (app: FastifyInstance, bodyLimit: number): Promise<void> {
  app.removeContentTypeParser('text/plain')
  registerStrictJson(app, bodyLimit)
  await app.register(fastifyFormbody, { bodyLimit, parser: parseFormEncoded })
  const emptyBodyAsObject: preValidationHookHandler = (request, _reply, done) => {
    if (request.body === undefined) request.body = EMPTY_BODY
    done()
  }
  app.addHook('onRoute', (route) => {
    if (route.schema?.body === undefined) return
    const fields = nonStringFields(route.schema.body)
    const bodyHook: preValidationHookHandler = fields.size === 0
      ? emptyBodyAsObject
      : (request, _reply, done) => {
          if (request.body === undefined) request.body = EMPTY_BODY
          else if (FORM.test(request.headers['content-type'] ?? '')) readFormFields(request.body, fields)
          done()
        }
    const own = route.preValidation
    route.preValidation = own === undefined ? [bodyHook] : [bodyHook, ...(Array.isArray(own) ? own : [own])]
  })
}
