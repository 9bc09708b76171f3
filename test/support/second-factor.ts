import type { FastifyInstance } from 'fastify'
import { base32Decode, totpAt } from '../../src/totp/rfc6238.js'

/**
 * Enrolls a TOTP second factor for an account through the service's own API, as the account page
 * does (a Login, POST /auth/totp with the current password, a code to confirm, a Logout); its
 * secret. The confirming code is the previous step's: a sign-in after it uses the current one,
 * and a code is taken once. Thrown, not asserted: an assertion on a root test before its
 * subtests would end it.
 */
export async function enrollTotp (app: FastifyInstance, username: string, password: string): Promise<Buffer> {
  const login = (await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password } })).json<{ token: string }>()
  const bearer = { authorization: `Bearer ${login.token}` }
  const begun = (await app.inject({ method: 'POST', url: '/auth/totp', headers: bearer, payload: { current_password: password } })).json<{ otpauth_uri: string }>()
  const secret = base32Decode(new URL(begun.otpauth_uri).searchParams.get('secret') ?? '')
  if (secret === undefined) throw new Error(`no secret in ${begun.otpauth_uri}`)
  const confirmed = await app.inject({ method: 'POST', url: '/auth/totp/confirm', headers: bearer, payload: { code: totpAt(secret, Date.now() - 30_000) } })
  if (confirmed.statusCode !== 200) throw new Error(`${username}: the TOTP enrollment was refused: ${confirmed.body}`)
  await app.inject({ method: 'POST', url: '/auth/Logout', headers: bearer })
  return secret
}
