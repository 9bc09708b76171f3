import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { AdminErrorSchema, success } from '../admin/schemas.js'
import { OK } from '../admin/views.js'
import { providerOff, type ClientActor, type OidcClients } from './clients.js'
import { CLIENT_URI_MAX_LENGTH, CLIENT_URIS_MAX } from './client-uris.js'
import { clientView } from './views.js'

/**
 * POST /admin/oidc/clients, GET /admin/oidc/clients, DELETE /admin/oidc/clients/{client_id}
 * (api-contract, Single sign-on: OpenID Connect provider).
 */

const URI_RULE = `absolute https (http only for localhost, 127.0.0.1 or [::1]), no fragment, at most ${CLIENT_URI_MAX_LENGTH} characters; kept exactly as given (a client must send it as registered)`
const Uri = Type.String({ maxLength: CLIENT_URI_MAX_LENGTH * 2 })

const NewClientSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 512, description: 'What the client is (1-128 characters): shown to operators', examples: ['Grafana'] }),
  redirect_uris: Type.Array(Uri, {
    maxItems: CLIENT_URIS_MAX * 4,
    description: `Where the provider may send a browser back with a code: at least one, at most ${CLIENT_URIS_MAX}; ${URI_RULE}`,
    examples: [['https://grafana.example.org/login/generic_oauth']]
  }),
  post_logout_redirect_uris: Type.Optional(Type.Array(Uri, { maxItems: CLIENT_URIS_MAX * 4, description: `Where RP-initiated logout may send a browser back (default none); ${URI_RULE}` })),
  public: Type.Optional(Type.Boolean({ default: false, description: 'true: a public client (a browser app, a command line): no secret, PKCE required; false: a confidential client, given a secret' })),
  backchannel_logout_uri: Type.Optional(Type.Union([Uri, Type.Null()], { description: `Where a logout token is posted when a session the client holds ends (default none); ${URI_RULE}` }))
}, { additionalProperties: false })

const ClientSchema = Type.Object({
  client_id: Type.String({ examples: ['dBjftJeZ4CVP-mB92K27uh'] }),
  name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  post_logout_redirect_uris: Type.Array(Type.String()),
  public: Type.Boolean(),
  backchannel_logout_uri: Type.Union([Type.String(), Type.Null()]),
  created: Type.String({ description: 'When it was registered: UTC, YYYY-MM-DDTHH:MM:SS (the expiration_date form)', examples: ['2026-11-22T11:41:48'] })
})

const ClientPathSchema = Type.Object({ client_id: Type.String({ minLength: 1, maxLength: 128 }) })

const CreatedClientAnswerSchema = success({
  client: ClientSchema,
  client_secret: Type.Optional(Type.String({ description: 'A confidential client\'s secret: in this answer only, never again (only its hash is kept); absent for a public client' }))
}, 'The registered client and, when confidential, its secret')
const ClientListAnswerSchema = success({ clients: Type.Array(ClientSchema) }, 'Every registered client, oldest first')
const RemovedClientAnswerSchema = success({ client: ClientSchema }, 'The client, now removed: every token it held has ended')

export interface ClientRoutesOptions {
  /** The clients; undefined when the provider is off (AUTH_OIDC_ISSUER unset). */
  clients: OidcClients | undefined
  actorOf: (request: FastifyRequest) => ClientActor
}

export const clientAdminRoutes: FastifyPluginAsyncTypebox<ClientRoutesOptions> = async (app, { clients, actorOf }) => {
  if (clients === undefined) {
    // Off, the contract has every OpenID route answer 404, and these are the provider's: a client
    // registered while it is off could be used by nothing, and the console and the command line
    // read the same routes. The 404 says why, rather than the admin API's "no such account".
    app.all('/oidc/*', { schema: { hide: true } }, async () => { throw providerOff() })
    return
  }
  const errors = { '4xx': AdminErrorSchema, '5xx': AdminErrorSchema }

  app.post('/oidc/clients', {
    schema: {
      summary: 'Register an OpenID Connect client: a confidential one\'s secret is in this answer only',
      body: NewClientSchema,
      response: { 200: CreatedClientAnswerSchema, ...errors }
    }
  }, async (request) => {
    const { body } = request
    const { client, secret } = await clients.create({
      name: body.name,
      redirectUris: body.redirect_uris,
      postLogoutRedirectUris: body.post_logout_redirect_uris,
      public: body.public,
      backchannelLogoutUri: body.backchannel_logout_uri
    }, actorOf(request))
    return { ...OK, client: clientView(client), ...(secret === undefined ? {} : { client_secret: secret }) }
  })

  app.get('/oidc/clients', {
    schema: { summary: 'Every registered OpenID Connect client (never a secret)', response: { 200: ClientListAnswerSchema, ...errors } }
  }, async () => ({ ...OK, clients: (await clients.list()).map(clientView) }))

  app.delete('/oidc/clients/:client_id', {
    schema: { summary: 'Remove an OpenID Connect client: every token it holds ends at once', params: ClientPathSchema, response: { 200: RemovedClientAnswerSchema, ...errors } }
  }, async (request) => ({ ...OK, client: clientView(await clients.remove(request.params.client_id, actorOf(request))) }))
}
