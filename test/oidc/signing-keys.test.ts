import t, { type Test } from 'tap'
import { createPrivateKey, createPublicKey, randomBytes, sign, verify, type JsonWebKey } from 'node:crypto'
import { mkdtemp } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { migrate } from '../../src/core/migrate.js'
import type { Database } from '../../src/db/database.js'
import {
  createSigningKeys, createSqlSigningKeyStore, jwkThumbprint, loadSigningKeys, SigningKeyUnreadable, watchSigningKeys,
  type SigningJwks, type SigningKeys
} from '../../src/oidc/index.js'
import { keyId, sealedKeyId, totpKeySource, type TotpKeys } from '../../src/totp/index.js'
import { freshPglite } from '../support/pglite.js'
import { freshPostgresDatabase, patientPostgres } from '../../support/postgres.js'

/*
 * The provider's signing keys on real databases: made once, sealed at rest (nothing of the
 * private key in the row), opened only with the sealing keys, rotated with the previous key kept
 * for as long as an ID token it signed lives, and handed to oidc-provider as it takes them.
 */

const TTL_SECONDS = 600
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi'] as const

const ring = (current: Buffer, previous: Buffer[] = []): () => Promise<TotpKeys> => async () => ({ current, previous })

function keysOn (db: Database, sealing: () => Promise<TotpKeys>, onUnreadable?: (kid: string) => void): SigningKeys {
  return createSigningKeys({ store: createSqlSigningKeyStore(db), sealing, idTokenTtlSeconds: TTL_SECONDS, onUnreadable })
}

async function pglite (t: Test): Promise<Database> {
  const db = await freshPglite()
  t.teardown(async () => { await db.close() })
  return db
}

interface RawRow { kid: string, alg: string, sealed_private: string, retired_at: Date | null, whole: string }

async function rows (db: Database): Promise<RawRow[]> {
  const { rows } = await db.query<RawRow>('SELECT kid, alg, sealed_private, retired_at, row_to_json(k)::text AS whole FROM oidc_signing_keys k ORDER BY created_at, alg DESC')
  return rows
}

/** A signature by the private JWK, checked with the public one the table holds: the pair is one key. */
function signsAndVerifies (jwk: JsonWebKey, publicJwk: JsonWebKey): boolean {
  const data = Buffer.from('header.payload')
  const options = jwk.kty === 'EC' ? { dsaEncoding: 'ieee-p1363' as const } : {}
  const signature = sign('sha256', data, { key: createPrivateKey({ key: jwk, format: 'jwk' }), ...options })
  return verify('sha256', data, { key: createPublicKey({ key: publicJwk, format: 'jwk' }), ...options }, signature)
}

t.test('the kid is the RFC 7638 thumbprint (the RFC\'s own example)', async (t) => {
  const n = '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw'
  t.equal(jwkThumbprint({ kty: 'RSA', n, e: 'AQAB', alg: 'RS256', kid: '2011-04-29' }), 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs')
  t.throws(() => jwkThumbprint({ kty: 'oct', k: 'AAAA' }), /no thumbprint/)
})

t.test('the first load makes one RS256 and one ES256 key, sealed: nothing of the private key in the row', async (t) => {
  const db = await pglite(t)
  const sealing = randomBytes(32)
  const keys = keysOn(db, ring(sealing))
  const jwks = await loadSigningKeys(keys)
  t.same(jwks.keys.map((key) => [key.alg, key.use, key.kty]), [['RS256', 'sig', 'RSA'], ['ES256', 'sig', 'EC']], 'RS256 first (the default), then ES256')
  t.equal((await loadSigningKeys(keys)).keys.length, 2, 'a second load makes none')
  const stored = await rows(db)
  t.equal(stored.length, 2)
  const { rows: publics } = await db.query<{ kid: string, public_jwk: JsonWebKey }>('SELECT kid, public_jwk FROM oidc_signing_keys')
  for (const jwk of jwks.keys) {
    const row = stored.find((candidate) => candidate.kid === jwk.kid)
    const publicJwk = publics.find((candidate) => candidate.kid === jwk.kid)?.public_jwk
    if (row === undefined || publicJwk === undefined) throw new Error(`no row for ${jwk.kid}`)
    t.equal(jwkThumbprint(jwk), jwk.kid, `${jwk.alg}: the kid is its thumbprint`)
    t.equal(sealedKeyId(row.sealed_private), keyId(sealing), 'sealed with the current sealing key')
    t.notOk('d' in publicJwk, 'the public JWK has no private member')
    for (const member of PRIVATE_MEMBERS) {
      const value = jwk[member]
      if (value === undefined) continue
      t.notOk(row.whole.includes(value), `${jwk.alg}: its "${member}" is nowhere in the row`)
      t.notOk(row.whole.includes(Buffer.from(value, 'base64url').toString('base64')), `${jwk.alg}: nor in base64`)
    }
    t.ok(signsAndVerifies(jwk, publicJwk), `${jwk.alg}: the opened private key and the stored public key are one pair`)
  }
  const ec = jwks.keys[1]
  t.equal(ec?.crv, 'P-256')
  const rsa = jwks.keys[0]
  t.equal(Buffer.from(rsa?.n ?? '', 'base64url').length * 8, 2048, 'RSA 2048')
})

t.test('oidc-provider takes the JWKS, publishes the public halves, and signs with the current RS256 key', async (t) => {
  const db = await pglite(t)
  const keys = keysOn(db, ring(randomBytes(32)))
  await keys.ensure()
  await keys.rotate()
  const jwks = await keys.jwks()
  t.equal(jwks.keys.length, 4, 'the current pair and the retired one')
  // Untyped package: what this test uses of it, named.
  const moduleName = 'oidc-provider'
  const { default: Provider } = await import(moduleName) as { default: new (issuer: string, configuration: object) => { callback (): Parameters<typeof createServer>[1] } }
  const provider = new Provider('http://127.0.0.1/oidc', { jwks })
  const server = createServer(provider.callback())
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  t.teardown(() => { server.close() })
  const { port } = server.address() as AddressInfo
  const published = await (await fetch(`http://127.0.0.1:${port}/jwks`)).json() as SigningJwks
  t.same(published.keys.map((key) => key.kid), jwks.keys.map((key) => key.kid), 'every key, in the same order')
  for (const key of published.keys) {
    for (const member of PRIVATE_MEMBERS) t.notOk(member in key, `${key.kid}: no "${member}" published`)
  }
  const discovery = await (await fetch(`http://127.0.0.1:${port}/.well-known/openid-configuration`)).json() as { id_token_signing_alg_values_supported: string[] }
  t.same(discovery.id_token_signing_alg_values_supported, ['RS256', 'ES256'], 'both algorithms offered')
})

t.test('a rotation: new current keys at once; the old ones kept until their ID tokens have expired, then dropped and deleted', async (t) => {
  const db = await pglite(t)
  const keys = keysOn(db, ring(randomBytes(32)))
  const t0 = new Date(Date.now() - 3_600_000)
  const first = await keys.ensure(t0)
  t.equal(first.length, 2)
  const t1 = new Date(t0.getTime() + 1000)
  const rotated = await keys.rotate(t1)
  t.same(rotated.retired.map((key) => key.kid).sort(), [...first].sort(), 'the first pair retired')
  t.ok(rotated.retired.every((key) => key.readable && key.keptUntil.getTime() === t1.getTime() + keys.keepRetiredMs), 'each kept until its time')
  t.ok(keys.keepRetiredMs >= TTL_SECONDS * 1000, 'at least the ID token\'s life')
  const newKids = rotated.keys.map((key) => key.kid)
  t.same(rotated.keys.map((key) => key.alg), ['RS256', 'ES256'])
  const justAfter = (await keys.jwks(t1)).keys
  t.same(justAfter.map((key) => key.kid).slice(0, 2), newKids, 'the new keys first: they sign')
  t.same(justAfter.map((key) => [key.kid, key.alg]).slice(2), rotated.retired.map((key) => [key.kid, key.alg]), 'then the retired ones, RS256 first')
  t.same(await keys.liveKids(t1), justAfter.map((key) => key.kid), 'the kids a reload compares are the JWKS\'s')
  const lastMoment = new Date(t1.getTime() + keys.keepRetiredMs - 1000)
  t.equal((await keys.jwks(lastMoment)).keys.length, 4, 'still there a second before its time')
  const past = new Date(t1.getTime() + keys.keepRetiredMs + 1000)
  t.same((await keys.jwks(past)).keys.map((key) => key.kid), newKids, 'gone after it')
  t.equal((await rows(db)).length, 4, 'the table keeps them until the next rotation')
  const again = await keys.rotate(past)
  const left = await rows(db)
  t.equal(left.length, 4, 'the next rotation deletes the keys past their time')
  t.notOk(left.some((row) => first.includes(row.kid)), 'the first pair is gone')
  t.same(again.retired.map((key) => key.kid), newKids)
})

t.test('several instances starting at once make one set; rotations at once each retire the other\'s (Postgres)', async (t) => {
  const url = await freshPostgresDatabase(t)
  const databases = Array.from({ length: 4 }, () => patientPostgres(url))
  t.teardown(async () => { await Promise.all(databases.map(async (db) => { await db.close() })) })
  await migrate(databases[0] as Database)
  const sealing = ring(randomBytes(32))
  const instances = databases.map((db) => keysOn(db, sealing))
  const made = await Promise.all(instances.map(async (keys) => await keys.ensure()))
  t.equal(made.flat().length, 2, `two keys made between them (${made.map((kids) => kids.length).join(', ')})`)
  const [db] = databases
  if (db === undefined) throw new Error('no database')
  t.same((await rows(db)).map((row) => row.alg).sort(), ['ES256', 'RS256'], 'one of each algorithm')
  const loaded = await Promise.all(instances.map(async (keys) => (await loadSigningKeys(keys)).keys.map((key) => key.kid).join()))
  t.equal(new Set(loaded).size, 1, 'every instance loads the same JWKS')
  const rotations = await Promise.all(instances.slice(0, 3).map(async (keys) => await keys.rotate()))
  const all = await rows(db)
  t.equal(all.length, 8, 'three rotations: three new pairs beside the first')
  t.same(all.filter((row) => row.retired_at === null).map((row) => row.alg).sort(), ['ES256', 'RS256'], 'one current key of each algorithm')
  t.equal(new Set(rotations.flatMap((rotation) => rotation.retired.map((key) => key.kid))).size, 6, 'each rotation retired the pair before it')
})

t.test('a wrong or lost sealing key: a clear error; the previous keys open them and they are sealed again', async (t) => {
  const db = await pglite(t)
  const [oldKey, newKey] = [randomBytes(32), randomBytes(32)]
  const made = await loadSigningKeys(keysOn(db, ring(oldKey)))
  const error = await keysOn(db, ring(newKey)).jwks().then(() => undefined, (caught: unknown) => caught)
  t.ok(error instanceof SigningKeyUnreadable, 'a SigningKeyUnreadable')
  if (!(error instanceof SigningKeyUnreadable)) return
  t.same([...error.kids].sort(), made.keys.map((key) => key.kid).sort(), 'naming the keys')
  t.match(error.message, new RegExp(`sealed with the key of id ${keyId(oldKey)}, not with this service's sealing key .*id ${keyId(newKey)}`), 'naming which key sealed them and which was tried')
  t.match(error.message, /AUTH_TOTP_PREVIOUS_KEYS \(none\)/)
  t.match(error.message, /oidc rotate-keys/, 'and the way out')
  t.notOk(error.message.includes(oldKey.toString('base64')) || error.message.includes(newKey.toString('base64')), 'never a key itself')

  const reopened = await keysOn(db, ring(newKey, [oldKey])).jwks()
  t.same(reopened.keys.map((key) => key.kid), made.keys.map((key) => key.kid), 'AUTH_TOTP_PREVIOUS_KEYS opens them')
  t.same(reopened.keys.map((key) => key.d), made.keys.map((key) => key.d), 'the same private keys')
  t.ok((await rows(db)).every((row) => sealedKeyId(row.sealed_private) === keyId(newKey)), 'sealed again with the current key')
  t.equal((await keysOn(db, ring(newKey)).jwks()).keys.length, 2, 'so the previous key can go')
})

t.test('the sealed part opens only on its own row', async (t) => {
  const db = await pglite(t)
  const sealing = ring(randomBytes(32))
  await loadSigningKeys(keysOn(db, sealing))
  await db.query("UPDATE oidc_signing_keys SET sealed_private = (SELECT sealed_private FROM oidc_signing_keys WHERE alg = 'RS256') WHERE alg = 'ES256'")
  await t.rejects(keysOn(db, sealing).jwks(), SigningKeyUnreadable, 'the RS256 key\'s sealed part copied onto the ES256 row does not open there')
})

t.test('a lost key file: a new one is made, and the keys sealed with the old one are refused by name', async (t) => {
  const db = await pglite(t)
  const dir = await mkdtemp(join(tmpdir(), 'oidc-keys-'))
  const source = (dataDir: string) => totpKeySource({ totpKey: undefined, totpPreviousKeys: [], dataDir: join(dir, dataDir) })
  await loadSigningKeys(keysOn(db, source('first')))
  await t.rejects(loadSigningKeys(keysOn(db, source('second'))), { name: 'SigningKeyUnreadable', message: /totp\.key in AUTH_DATA_DIR/ })
})

t.test('a retired key that no longer opens leaves the JWKS, said once per load; a rotation recovers from a lost key', async (t) => {
  const db = await pglite(t)
  const [lost, replacement] = [randomBytes(32), randomBytes(32)]
  const old = await loadSigningKeys(keysOn(db, ring(lost)))
  const unreadable: string[] = []
  const keys = keysOn(db, ring(replacement), (kid) => { unreadable.push(kid) })
  await t.rejects(keys.jwks(), SigningKeyUnreadable, 'the current keys do not open: no JWKS')
  const rotated = await keys.rotate()
  t.same(rotated.retired.map((key) => key.readable), [false, false], 'the rotation says the retired keys did not open')
  const jwks = await keys.jwks()
  t.same(jwks.keys.map((key) => key.kid), rotated.keys.map((key) => key.kid), 'the new keys only')
  t.same(unreadable.sort(), old.keys.map((key) => key.kid).sort(), 'each left-out key told')
})

t.test('a running service follows rotations: its own at once, another process\'s at the next look', async (t) => {
  const db = await pglite(t)
  const sealing = ring(randomBytes(32))
  const service = keysOn(db, sealing)
  const changes: SigningJwks[] = []
  const errors: unknown[] = []
  let changed: () => void = () => {}
  const watch = await watchSigningKeys(service, {
    everyMs: 3_600_000,
    onChange: (jwks) => { changes.push(jwks); changed() },
    onError: (error) => { errors.push(error) }
  })
  t.teardown(() => { watch.stop() })
  t.equal(watch.jwks.keys.length, 2, 'the first load made the keys')
  const next = async (): Promise<SigningJwks> => await new Promise((resolve) => { changed = () => { resolve(changes.at(-1) as SigningJwks) } })

  const seen = next()
  const own = await service.rotate()
  t.same((await seen).keys.slice(0, 2).map((key) => key.kid), own.keys.map((key) => key.kid), 'its own rotation: the new keys, without waiting for a look')

  const elsewhere = await keysOn(db, sealing).rotate()
  t.equal(changes.length, 1, 'another process\'s rotation is not seen before a look')
  await watch.refresh()
  t.equal(changes.length, 2)
  t.same(changes[1]?.keys.slice(0, 2).map((key) => key.kid), elsewhere.keys.map((key) => key.kid), 'seen at the look')
  await watch.refresh()
  t.equal(changes.length, 2, 'a look that finds nothing new hands nothing over')
  t.same(errors, [])

  await keysOn(db, sealing).rotate()
  await db.query("UPDATE oidc_signing_keys SET sealed_private = 'v1.00000000.AA.AA' WHERE retired_at IS NULL")
  await t.rejects(watch.refresh(), SigningKeyUnreadable, 'keys that do not open: the look fails')
  t.equal(changes.length, 2, 'and the provider keeps the JWKS it has')
})

t.test('timed looks: a failed one goes to onError, and the watch stops', async (t) => {
  const db = await pglite(t)
  const sealing = ring(randomBytes(32))
  let failures = 0
  let looks = 0
  const keys = keysOn(db, sealing)
  const counting: SigningKeys = { ...keys, liveKids: async (now) => { looks++; if (looks > 2) throw new Error('database gone'); return await keys.liveKids(now) } }
  const watch = await watchSigningKeys(counting, { everyMs: 20, onChange: () => {}, onError: () => { failures++ } })
  await new Promise((resolve) => setTimeout(resolve, 300))
  watch.stop()
  t.ok(failures >= 1, `failed looks told (${failures})`)
  const after = looks
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal(looks, after, 'no look after stop')
})
