import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { AdminErrorSchema, success } from '../admin/schemas.js'
import { OK } from '../admin/views.js'
import { SIGNING_ALGS } from './key-store.js'
import type { RotatedKeys, SigningKeys } from './signing-keys.js'

const Alg = Type.Union(SIGNING_ALGS.map((alg) => Type.Literal(alg)))

export const RotatedKeysAnswerSchema = success({
  keys: Type.Array(Type.Object({ kid: Type.String(), alg: Alg, created: Type.String({ format: 'date-time' }) }), { description: 'The new current keys: they sign from now on' }),
  retired: Type.Array(Type.Object({
    kid: Type.String(),
    alg: Alg,
    kept_until: Type.String({ format: 'date-time', description: 'The JWKS holds it until then (the ID tokens it signed have expired)' }),
    readable: Type.Boolean({ description: 'Its private part opens with the service\'s sealing key (false: it is left out of the JWKS at once)' })
  }), { description: 'The keys that were current' })
}, 'The signing keys made, and those retired')

/** A rotation as the admin API answers it (and the command line prints it, through either adapter). */
export function rotatedKeysView ({ keys, retired }: RotatedKeys) {
  return {
    keys: keys.map(({ kid, alg, created }) => ({ kid, alg, created: created.toISOString() })),
    retired: retired.map(({ kid, alg, keptUntil, readable }) => ({ kid, alg, kept_until: keptUntil.toISOString(), readable }))
  }
}

/** The admin API's part of the provider's signing keys: POST /admin/oidc/keys/rotate (docs/single-sign-on.md#signing-keys). */
export const signingKeyAdminRoutes: FastifyPluginAsyncTypebox<{ signingKeys: SigningKeys | undefined }> = async (app, { signingKeys }) => {
  // Off, the clients' routes answer every /admin/oidc path with the 404 that says why (admin-routes.ts).
  if (signingKeys === undefined) return
  const errors = { '4xx': AdminErrorSchema, '5xx': AdminErrorSchema }
  app.post('/oidc/keys/rotate', {
    schema: { summary: 'Make new signing keys for the OpenID Connect provider; the current ones stay in the JWKS until the ID tokens they signed have expired', response: { 200: RotatedKeysAnswerSchema, ...errors } }
  }, async () => {
    return { ...OK, ...rotatedKeysView(await signingKeys.rotate()) }
  })
}
