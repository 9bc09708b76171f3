import t, { type Test } from 'tap'
import { Writable } from 'node:stream'
import * as oidc from 'openid-client'
import type { BackendKind } from '../support/app.js'
import { rejection } from '../support/rejection.js'
import { authorize, Jar, PASSWORD, pkceRequest, setUp } from './support.js'

/*
 * The provider's failures and refusals in the service's log (LOG_LEVEL info, the service's own
 * logger): a failure of ours (a store throwing) at error with the provider's server_error, a
 * refused request at info, a code or refresh token used twice at warn; each line with the
 * request's id. And no line holds a secret of the flows driven: the password, the client secret,
 * the code, the verifier, the access and refresh tokens, the browser's cookies.
 */

class LogCapture extends Writable {
  readonly lines: string[] = []
  override _write (chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.lines.push(...String(chunk).split('\n').filter((line) => line !== ''))
    done()
  }
}

interface LogLine {
  level: number
  msg?: string
  reqId?: string
  oidc?: { event?: string, route?: string, client_id?: string, error?: string, detail?: string, grant_type?: string }
  err?: { message?: string }
}

function logContract (t: Test, kind: BackendKind): void {
  t.test('failures at error, refusals at info, reuse at warn, with the request id; no secret in any line', async (t) => {
    const capture = new LogCapture()
    const flow = await setUp(t, kind, { overrides: { logLevel: 'info' }, logStream: capture })
    const { app, base, config, clientId, secret } = flow
    const secrets: string[] = [PASSWORD, secret]

    // A refusal: a redirect_uri never registered.
    const { url: bad } = await pkceRequest(config, { redirect_uri: 'https://app.example.org/elsewhere' })
    t.equal((await fetch(bad, { redirect: 'manual' })).status, 400)

    // A code exchanged twice, then its refresh token after rotation: both reuses.
    const jar = new Jar()
    const { url, verifier, state } = await pkceRequest(config)
    const back = await authorize(base, jar, url, { username: 'alice', password: PASSWORD })
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state })
    secrets.push(back.searchParams.get('code') ?? '', verifier, tokens.access_token, tokens.refresh_token ?? '', tokens.id_token ?? '', ...jar.cookies.values())
    t.match(await rejection(oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state })), { error: 'invalid_grant' })
    const second = await pkceRequest(config)
    const backAgain = await authorize(base, jar, second.url)
    const more = await oidc.authorizationCodeGrant(config, backAgain, { pkceCodeVerifier: second.verifier, expectedState: second.state })
    const rotated = await oidc.refreshTokenGrant(config, more.refresh_token ?? '')
    secrets.push(backAgain.searchParams.get('code') ?? '', second.verifier, more.access_token, more.refresh_token ?? '', rotated.access_token, rotated.refresh_token ?? '')
    t.match(await rejection(oidc.refreshTokenGrant(config, more.refresh_token ?? '')), { error: 'invalid_grant' })

    // A wrong client secret.
    const wrongSecret = `${secret.slice(0, -4)}XXXX`
    secrets.push(wrongSecret)
    const impostor = new oidc.Configuration(config.serverMetadata(), clientId, wrongSecret)
    oidc.allowInsecureRequests(impostor)
    t.match(await rejection(oidc.refreshTokenGrant(impostor, rotated.refresh_token ?? '')), { error: 'invalid_client' })

    // A failure of ours: the client store throws.
    const metadataOf = app.oidcClients.metadataOf
    app.oidcClients.metadataOf = async () => { throw new Error('the client store is down') }
    const { url: failing } = await pkceRequest(config)
    const failed = await fetch(failing, { redirect: 'manual', headers: { cookie: jar.header() } })
    app.oidcClients.metadataOf = metadataOf
    t.equal(failed.status, 500, 'a failure: 500')
    t.match(await failed.text(), 'Sign-in is unavailable right now.', 'the error page says so, and no more')

    await app.close()
    const records = capture.lines.map((line) => JSON.parse(line) as LogLine)
    const provider = records.filter((record) => record.oidc !== undefined)
    const serverError = provider.find((record) => record.oidc?.event === 'server_error')
    t.match(serverError, { level: 50, msg: 'the OpenID Connect provider failed a request', oidc: { route: 'authorization', error: 'server_error' }, err: { message: 'the client store is down' } }, 'server_error: at error, with the failure')
    t.match(provider.find((record) => record.oidc?.error === 'invalid_redirect_uri'), { level: 30, oidc: { event: 'authorization.error', client_id: clientId } }, 'a redirect_uri refused: at info')
    t.match(provider.find((record) => record.oidc?.error === 'invalid_client'), { level: 30, oidc: { event: 'grant.error', route: 'token' } }, 'a wrong secret: at info')
    const reuses = provider.filter((record) => record.level === 40)
    t.same(reuses.map((record) => record.oidc), [
      { event: 'grant.revoked', route: 'token', client_id: clientId, grant_type: 'authorization_code' },
      { event: 'grant.revoked', route: 'token', client_id: clientId, grant_type: 'refresh_token' }
    ], 'each reuse: at warn, what was reused named')
    t.match(provider.filter((record) => record.oidc?.error === 'invalid_grant').map((record) => [record.level, record.oidc?.detail]), [
      [30, 'authorization code already consumed'],
      [30, 'refresh token already used']
    ], 'and its refusal at info')
    t.ok(provider.every((record) => typeof record.reqId === 'string' && records.some((other) => other.reqId === record.reqId && other !== record)),
      'each line has its request\'s id, shared with the request\'s access line')

    const leaks = secrets.filter((value) => value.length >= 8 && capture.lines.some((line) => line.includes(value) || line.includes(encodeURIComponent(value))))
    t.same(leaks.map((value) => `${value.slice(0, 6)}…`), [], `no secret in ${capture.lines.length} log lines`)
  })
}

t.test('Postgres and Redis', async (t) => { logContract(t, 'real') })
t.test('embedded default', async (t) => { logContract(t, 'embedded') })
