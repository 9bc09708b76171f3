import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import * as oidc from 'openid-client'
import type { BackendKind } from '../support/app.js'
import { rejection } from '../support/rejection.js'
import { keysUnder } from '../../support/redis.js'
import { artifactPrefix } from '../../src/oidc/service.js'
import { authenticate, authorize, Jar, PASSWORD, pkceRequest, publicClient, REDIRECT, setUp, signedInTokens, type Flow } from './support.js'

/*
 * What the token endpoint refuses, driven by openid-client (panva) on both backends: a code used
 * twice (and, as oidc-provider does, the tokens of its first exchange ended with it), PKCE missing,
 * `plain` or wrong, and a refresh token used after its rotation (reuse ends the whole grant). Each
 * ended access token is a token of the service: Authenticate refuses it (403) at once, so the
 * adapter's revokeByGrantId reached the token store, not only the provider's own keys.
 */

/** The provider's artifacts of a grant left in Redis (none after its revocation: the adapter's index pitfall). */
async function grantArtifacts (flow: Flow): Promise<string[]> {
  const tokens = flow.app.backends.tokens
  if (tokens.kind !== 'redis' || !(tokens.redis instanceof Redis)) return []
  const keys = await keysUnder(tokens.redis, artifactPrefix(flow.testApp.redisPrefix ?? ''))
  return keys.filter((key) => /oidc1:(AccessToken|RefreshToken|AuthorizationCode|Grant|grant):/.test(key))
}

function reuseContract (t: Test, kind: BackendKind): void {
  t.test('a code exchanged twice: invalid_grant, and the tokens of its first exchange end', async (t) => {
    const flow = await setUp(t, kind)
    const { base, config, app } = flow
    const jar = new Jar()
    const { url, verifier, state } = await pkceRequest(config)
    const back = await authorize(base, jar, url, { username: 'alice', password: PASSWORD })
    const first = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state })
    t.match(await authenticate(app, first.access_token), { status: 0, kind: 'oidc' }, 'the first exchange\'s access token works')

    const again = await rejection(oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state }))
    t.type(again, oidc.ResponseBodyError, 'refused by the token endpoint')
    t.match(again, { error: 'invalid_grant' }, 'the second exchange: invalid_grant')
    t.match(await authenticate(app, first.access_token), { status: 403 }, 'the first access token is refused by Authenticate now')
    t.match(await rejection(oidc.fetchUserInfo(config, first.access_token, oidc.skipSubjectCheck)), { status: 401 }, 'and by userinfo')
    t.match(await rejection(oidc.refreshTokenGrant(config, first.refresh_token ?? '')), { error: 'invalid_grant' }, 'its refresh token ended too')
    if (kind === 'real') t.same(await grantArtifacts(flow), [], 'nothing of the grant is left in Redis')

    // The person's sign-in is not what was replayed: a new authorization works at once.
    const fresh = await pkceRequest(config)
    const next = await authorize(base, jar, fresh.url)
    const tokens = await oidc.authorizationCodeGrant(config, next, { pkceCodeVerifier: fresh.verifier, expectedState: fresh.state })
    t.match(await authenticate(app, tokens.access_token), { status: 0, kind: 'oidc' }, 'a new grant for the same sign-in works')
  })

  t.test('PKCE: required of a public client, S256 only, and the verifier must match', async (t) => {
    const flow = await setUp(t, kind)
    const { base, config } = flow
    t.same(config.serverMetadata().code_challenge_methods_supported, ['S256'], 'discovery offers S256 alone')
    const cli = await publicClient(flow)

    // A public client with no code_challenge: refused at its redirect_uri, before anyone signs in.
    const state = oidc.randomState()
    const bare = oidc.buildAuthorizationUrl(cli.config, { redirect_uri: REDIRECT, scope: 'openid', state })
    const withoutPkce = await authorize(base, new Jar(), bare)
    t.notOk(withoutPkce.searchParams.has('code'), 'no code without PKCE')
    const missing = await rejection(oidc.authorizationCodeGrant(cli.config, withoutPkce, { expectedState: state }))
    t.type(missing, oidc.AuthorizationResponseError, 'openid-client: an authorization error')
    t.match(missing, { error: 'invalid_request', error_description: /PKCE/ }, 'PKCE is required of a public client')

    // plain: refused whatever the client.
    for (const [what, client] of [['public', cli.config], ['confidential', config]] as const) {
      const verifier = oidc.randomPKCECodeVerifier()
      const plain = oidc.buildAuthorizationUrl(client, { redirect_uri: REDIRECT, scope: 'openid', state, code_challenge: verifier, code_challenge_method: 'plain' })
      const back = await authorize(base, new Jar(), plain)
      t.notOk(back.searchParams.has('code'), `${what}: no code for plain`)
      t.match(await rejection(oidc.authorizationCodeGrant(client, back, { expectedState: state, pkceCodeVerifier: verifier })),
        { error: 'invalid_request', error_description: /code_challenge_method/ }, `${what}: plain is refused`)
    }

    // A code made for a challenge: the wrong verifier, or none, is invalid_grant; the public client's right one works.
    const jar = new Jar()
    const request = await pkceRequest(cli.config)
    const back = await authorize(base, jar, request.url, { username: 'alice', password: PASSWORD })
    const wrong = await rejection(oidc.authorizationCodeGrant(cli.config, back, { pkceCodeVerifier: oidc.randomPKCECodeVerifier(), expectedState: request.state }))
    t.type(wrong, oidc.ResponseBodyError, 'refused by the token endpoint')
    t.match(wrong, { error: 'invalid_grant' }, 'a wrong verifier: invalid_grant')
    t.match(await rejection(oidc.authorizationCodeGrant(cli.config, back, { expectedState: request.state })), { error: 'invalid_grant' }, 'no verifier: invalid_grant')
    const tokens = await oidc.authorizationCodeGrant(cli.config, back, { pkceCodeVerifier: request.verifier, expectedState: request.state })
    t.match(await authenticate(flow.app, tokens.access_token), { status: 0, kind: 'oidc', client_id: cli.clientId }, 'the right verifier: the public client\'s tokens')
  })

  t.test('refresh: rotated at each use; a used refresh token presented again ends the whole grant', async (t) => {
    const flow = await setUp(t, kind)
    const { config, app } = flow
    const { tokens: first } = await signedInTokens(flow)
    const used = first.refresh_token ?? ''
    const second = await oidc.refreshTokenGrant(config, used)
    t.ok(second.refresh_token, 'a new refresh token')
    t.not(second.refresh_token, used, 'rotated: not the one presented')
    t.match(await authenticate(app, second.access_token), { status: 0, kind: 'oidc' }, 'the new access token works')
    const third = await oidc.refreshTokenGrant(config, second.refresh_token ?? '')
    t.match(await authenticate(app, third.access_token), { status: 0, kind: 'oidc' }, 'the chain goes on with the newest')

    // The first refresh token again: a thief's copy or the client's, it cannot tell which, so the grant ends.
    const reused = await rejection(oidc.refreshTokenGrant(config, used))
    t.type(reused, oidc.ResponseBodyError, 'refused by the token endpoint')
    t.match(reused, { error: 'invalid_grant' }, 'a used refresh token: invalid_grant')
    for (const [what, token] of [['the first', first.access_token], ['the second', second.access_token], ['the current', third.access_token]] as const) {
      t.match(await authenticate(app, token), { status: 403 }, `${what} access token: Authenticate 403`)
    }
    t.match(await rejection(oidc.fetchUserInfo(config, third.access_token, oidc.skipSubjectCheck)), { status: 401 }, 'userinfo refuses the current one')
    t.match(await rejection(oidc.refreshTokenGrant(config, third.refresh_token ?? '')), { error: 'invalid_grant' }, 'the current refresh token is refused')
    if (kind === 'real') t.same(await grantArtifacts(flow), [], 'nothing of the grant is left in Redis')
  })

  t.test('a refresh token revoked at the revocation endpoint ends its grant\'s access tokens', async (t) => {
    const flow = await setUp(t, kind)
    const { tokens } = await signedInTokens(flow)
    await oidc.tokenRevocation(flow.config, tokens.refresh_token ?? '', { token_type_hint: 'refresh_token' })
    t.match(await authenticate(flow.app, tokens.access_token), { status: 403 }, 'Authenticate refuses the access token')
    t.match(await rejection(oidc.refreshTokenGrant(flow.config, tokens.refresh_token ?? '')), { error: 'invalid_grant' }, 'the refresh token is gone')
  })

  t.test('a client revokes only its own tokens: another client\'s is refused and keeps working', async (t) => {
    const flow = await setUp(t, kind)
    const { tokens } = await signedInTokens(flow)
    const { client, secret } = await flow.app.oidcClients.create({ name: 'Other', redirectUris: [REDIRECT] }, { userAgent: 'test' })
    const other = await oidc.discovery(new URL(`${flow.base}/oidc`), client.clientId, secret, undefined, { execute: [oidc.allowInsecureRequests] })
    t.match(await rejection(oidc.tokenRevocation(other, tokens.refresh_token ?? '', { token_type_hint: 'refresh_token' })), { error: 'invalid_request' },
      'a confidential client: refused')
    const { config: cli } = await publicClient(flow)
    await oidc.tokenRevocation(cli, tokens.access_token, { token_type_hint: 'access_token' })
    t.match(await authenticate(flow.app, tokens.access_token), { status: 0, kind: 'oidc' }, 'a public client: answered, and nothing revoked')
    const refreshed = await oidc.refreshTokenGrant(flow.config, tokens.refresh_token ?? '')
    t.ok(refreshed.access_token, 'the owner\'s refresh token still works')
  })
}

t.test('Postgres and Redis', async (t) => { reuseContract(t, 'real') })
t.test('embedded default', async (t) => { reuseContract(t, 'embedded') })
