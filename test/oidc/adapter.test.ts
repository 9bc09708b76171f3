import t from 'tap'
import * as oidc from 'openid-client'
import { artifactPrefix } from '../../src/oidc/service.js'
import { authenticate, setUp, signedInTokens } from './support.js'

/*
 * The adapter's known pitfalls (issue 45), read in the Redis the provider writes: a grant's index
 * expires (never an immortal key), a consumed refresh token is kept and marked until it expires
 * (reuse detection needs it) while its grant's tokens are ended by revokeByGrantId, no key names a
 * secret (codes, refresh tokens, session ids: only their SHA-256), no payload holds one; and a
 * client's removal ends every access token it holds.
 */

t.test('in Redis: expiring grant index, consumed refresh token kept, no secret in a key or payload; a removed client\'s tokens end', async (t) => {
  const flow = await setUp(t, 'real')
  const { tokens: store, redisPrefix } = flow.testApp
  if (store.kind !== 'redis' || redisPrefix === undefined) throw new Error('the real kind runs on Redis')
  const redis = store.redis
  const { tokens } = await signedInTokens(flow)
  const refreshToken = tokens.refresh_token ?? ''
  const keys = async (): Promise<string[]> => await redis.keys(`${artifactPrefix(redisPrefix)}*`)

  const grantIndexes = (await keys()).filter((key) => key.startsWith(`${artifactPrefix(redisPrefix)}grant:`))
  t.ok(grantIndexes.length > 0, 'a grant index')
  for (const key of grantIndexes) t.ok(await redis.pttl(key) > 0, `${key.slice(redisPrefix.length)} expires`)
  for (const key of await keys()) t.ok(await redis.pttl(key) > 0, `every artifact key expires: ${key.slice(redisPrefix.length, redisPrefix.length + 30)}…`)

  const rotated = await oidc.refreshTokenGrant(flow.config, refreshToken)
  const values = await Promise.all((await keys()).map(async (key) => (await redis.type(key)) === 'string' ? await redis.get(key) ?? '' : (await redis.smembers(key)).join(' ')))
  const everything = [...await keys(), ...values].join('\n')
  for (const secret of [refreshToken, rotated.refresh_token ?? '', tokens.access_token, rotated.access_token]) {
    t.notOk(everything.includes(secret), 'no key or value holds a token')
  }
  const consumed = values.filter((value) => value.includes('"kind":"RefreshToken"') && value.includes('"consumed"'))
  t.equal(consumed.length, 1, 'the consumed refresh token is kept, marked')

  const reused = await oidc.refreshTokenGrant(flow.config, refreshToken).then(() => undefined, (error: unknown) => error)
  t.match(reused, { error: 'invalid_grant' }, 'its reuse is found')
  t.match(await authenticate(flow.app, rotated.access_token), { status: 403 }, 'and its grant\'s access token ended (revokeByGrantId reached the token store)')

  const second = await signedInTokens(flow)
  t.match(await authenticate(flow.app, second.tokens.access_token), { status: 0, kind: 'oidc' })
  await flow.app.oidcClients.remove(flow.clientId, { userAgent: 'test' })
  t.match(await authenticate(flow.app, second.tokens.access_token), { status: 403 }, 'removing the client ends its access tokens')
  const after = await oidc.refreshTokenGrant(flow.config, second.tokens.refresh_token ?? '').then(() => undefined, (error: unknown) => error)
  t.match(after, { error: 'invalid_client' }, 'and its refresh tokens find no client')
})
