import { createHash, generateKeyPair, type JsonWebKey, type KeyPairKeyObjectResult } from 'node:crypto'
import { promisify } from 'node:util'
import { keyId, openSecret, sealedKeyId, sealSecret, type TotpKeys } from '../totp/index.js'
import { SIGNING_ALGS, type NewSigningKey, type SigningAlg, type SigningKeyStore, type StoredSigningKey } from './key-store.js'

/**
 * The provider's signing keys (api-contract, Single sign-on): made by the service (RSA 2048 for
 * RS256, P-256 for ES256), their private parts sealed like the TOTP secrets (the same keys,
 * AUTH_TOTP_KEY and AUTH_TOTP_PREVIOUS_KEYS, the kid as associated data), rotated on demand.
 * The JWKS handed to oidc-provider holds the current keys and, for as long as an ID token they
 * signed may still be checked, the retired ones. Only ID tokens and logout tokens are signed:
 * access and refresh tokens are opaque.
 */

/** A private JWK as oidc-provider's `jwks` option takes it. */
export interface PrivateSigningJwk extends JsonWebKey {
  kid: string
  alg: SigningAlg
  use: 'sig'
}

export interface SigningJwks {
  /** The current keys first (RS256, the default, before ES256), then the retired ones, newest first. */
  keys: PrivateSigningJwk[]
}

export interface RotatedKeys {
  /** The new current keys. */
  keys: Array<{ kid: string, alg: SigningAlg, created: Date }>
  /** The keys that were current, each kept in the JWKS until `keptUntil`. */
  retired: Array<{ kid: string, alg: SigningAlg, keptUntil: Date, readable: boolean }>
}

/**
 * How often a running service looks for keys another process rotated (watchSigningKeys), and so
 * how long past the ID token's life a retired key is kept: an instance that has not seen a
 * rotation yet still signs with the key the others retired.
 */
export const RELOAD_EVERY_MS = 60_000

/** A current key whose private part opens with none of the sealing keys: the provider cannot sign. */
export class SigningKeyUnreadable extends Error {
  readonly kids: readonly string[]
  constructor (keys: readonly StoredSigningKey[], ring: TotpKeys) {
    const sealedWith = [...new Set(keys.map((key) => sealedKeyId(key.sealedPrivate) ?? 'unknown'))].join(', ')
    const previous = ring.previous.map(keyId)
    super(`the OpenID Connect signing key(s) ${keys.map((key) => key.kid).join(', ')} do not open: sealed with the key of id ${sealedWith}, ` +
      `not with this service's sealing key (AUTH_TOTP_KEY, AUTH_TOTP_KEY_FILE or totp.key in AUTH_DATA_DIR: id ${keyId(ring.current)}) ` +
      `nor AUTH_TOTP_PREVIOUS_KEYS (${previous.length === 0 ? 'none' : `ids ${previous.join(', ')}`}). ` +
      'Give the service the key that sealed them (or add it to AUTH_TOTP_PREVIOUS_KEYS), or make new signing keys with ' +
      '`auth-token-service oidc rotate-keys` (ID tokens the old ones signed then no longer verify)')
    this.name = 'SigningKeyUnreadable'
    this.kids = keys.map((key) => key.kid)
  }
}

export interface SigningKeysOptions {
  store: SigningKeyStore
  /** The sealing keys: the TOTP secrets' (totpKeySource). */
  sealing: () => Promise<TotpKeys>
  /** AUTH_OIDC_ID_TOKEN_TTL_SECONDS: the longest life of a token a key signs. */
  idTokenTtlSeconds: number
  /** A retired key that opens with none of the sealing keys: left out of the JWKS (it signs nothing any more). */
  onUnreadable?: (kid: string) => void
}

export interface SigningKeys {
  /** Makes a current key for each algorithm that has none (the first start): the kids made. */
  ensure (now?: Date): Promise<string[]>
  /** Retires the current keys and makes new ones. */
  rotate (now?: Date): Promise<RotatedKeys>
  /** The private JWKS for oidc-provider (`jwks`); a current key that does not open is a SigningKeyUnreadable. */
  jwks (now?: Date): Promise<SigningJwks>
  /** The kids the JWKS holds at `now`, read without opening anything: what a reload compares. */
  liveKids (now?: Date): Promise<string[]>
  /** Called after each rotation made through this object; returns the unsubscribe. */
  onRotated (listener: () => void): () => void
  /** How long after its retirement a key stays in the JWKS. */
  readonly keepRetiredMs: number
}

/** RFC 7638: the SHA-256 of the key's required public members, in lexicographic order, without whitespace. */
export function jwkThumbprint (jwk: JsonWebKey): string {
  let members: Record<string, unknown>
  if (jwk.kty === 'RSA') members = { e: jwk.e, kty: jwk.kty, n: jwk.n }
  else if (jwk.kty === 'EC') members = { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
  else throw new Error(`no thumbprint for a ${String(jwk.kty)} key`)
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url')
}

const generate = promisify(generateKeyPair)

interface MadeKey extends NewSigningKey {
  privateJwk: JsonWebKey
}

/** A new key pair (generated off the event loop, on libuv's threads). */
async function makeKey (alg: SigningAlg): Promise<Omit<MadeKey, 'sealedPrivate'>> {
  const pair: KeyPairKeyObjectResult = alg === 'RS256'
    ? await generate('rsa', { modulusLength: 2048 })
    : await generate('ec', { namedCurve: 'P-256' })
  const publicJwk = pair.publicKey.export({ format: 'jwk' })
  return { kid: jwkThumbprint(publicJwk), alg, publicJwk, privateJwk: pair.privateKey.export({ format: 'jwk' }) }
}

/** The associated data: a sealed key opens only on its own row (nor does a TOTP secret's row open it). */
const associatedData = (kid: string): string => `oidc-signing-key:${kid}`

const seal = (key: Buffer, kid: string, privateJwk: JsonWebKey): string => sealSecret(key, Buffer.from(JSON.stringify(privateJwk), 'utf8'), associatedData(kid))

/** The key's private JWK, or undefined when no sealing key opens it or what opens is not that key. */
function openKey (ring: TotpKeys, stored: StoredSigningKey): { jwk: PrivateSigningJwk, stale: boolean } | undefined {
  const opened = openSecret(ring, stored.sealedPrivate, associatedData(stored.kid))
  if (opened === undefined) return undefined
  let jwk: JsonWebKey
  try {
    jwk = JSON.parse(opened.secret.toString('utf8')) as JsonWebKey
  } catch {
    return undefined
  } finally {
    opened.secret.fill(0)
  }
  if (jwkThumbprint(jwk) !== stored.kid || typeof jwk.d !== 'string') return undefined
  return { jwk: { ...jwk, kid: stored.kid, alg: stored.alg, use: 'sig' }, stale: opened.stale }
}

export function createSigningKeys ({ store, sealing, idTokenTtlSeconds, onUnreadable }: SigningKeysOptions): SigningKeys {
  const keepRetiredMs = idTokenTtlSeconds * 1000 + RELOAD_EVERY_MS
  const listeners = new Set<() => void>()
  const retiredAfter = (now: Date): Date => new Date(now.getTime() - keepRetiredMs)

  async function made (algs: readonly SigningAlg[]): Promise<NewSigningKey[]> {
    if (algs.length === 0) return []
    const ring = await sealing()
    const keys = await Promise.all(algs.map(makeKey))
    return keys.map(({ kid, alg, publicJwk, privateJwk }) => ({ kid, alg, publicJwk, sealedPrivate: seal(ring.current, kid, privateJwk) }))
  }

  return {
    keepRetiredMs,
    async ensure (now = new Date()) {
      const current = await store.currentAlgs()
      return await store.addFirst(await made(SIGNING_ALGS.filter((alg) => !current.includes(alg))), now)
    },
    async rotate (now = new Date()) {
      const keys = await made(SIGNING_ALGS)
      const ring = await sealing()
      const retired = await store.rotate(keys, now, retiredAfter(now))
      for (const listener of listeners) listener()
      const keptUntil = new Date(now.getTime() + keepRetiredMs)
      return {
        keys: keys.map(({ kid, alg }) => ({ kid, alg, created: now })),
        retired: retired.map((key) => ({ kid: key.kid, alg: key.alg, keptUntil, readable: openKey(ring, key) !== undefined }))
      }
    },
    async jwks (now = new Date()) {
      const stored = await store.live(retiredAfter(now))
      const ring = await sealing()
      const keys: PrivateSigningJwk[] = []
      const unreadable: StoredSigningKey[] = []
      for (const key of stored) {
        const opened = openKey(ring, key)
        if (opened === undefined) {
          if (key.retiredAt === null) unreadable.push(key)
          else onUnreadable?.(key.kid)
          continue
        }
        // Opened with a previous sealing key: sealed again with the current one, so that the
        // previous key can be dropped from AUTH_TOTP_PREVIOUS_KEYS (TOTP's secrets do the same).
        // Best effort: a failed write leaves it as it was, and the next load tries again.
        if (opened.stale) await store.reseal(key.kid, key.sealedPrivate, seal(ring.current, key.kid, opened.jwk)).catch(() => {})
        keys.push(opened.jwk)
      }
      if (unreadable.length > 0) throw new SigningKeyUnreadable(unreadable, ring)
      return { keys }
    },
    async liveKids (now = new Date()) {
      return await store.liveKids(retiredAfter(now))
    },
    onRotated (listener) {
      listeners.add(listener)
      return () => { listeners.delete(listener) }
    }
  }
}

/** The JWKS for the provider, the first keys made if there are none yet. */
export async function loadSigningKeys (keys: SigningKeys, now = new Date()): Promise<SigningJwks> {
  await keys.ensure(now)
  return await keys.jwks(now)
}

export interface SigningKeyWatch {
  /** The JWKS as first loaded. */
  jwks: SigningJwks
  /** Looks now (after any look under way): a changed set of keys is loaded and handed to onChange. */
  refresh (): Promise<void>
  stop (): void
}

/**
 * Loads the JWKS, then keeps it current for a running service: at once after a rotation made
 * through `keys` (the admin API's), and every `everyMs` for one made elsewhere (the command line
 * with the database opened itself, another instance) or a retired key whose time is up. A look
 * reads only the kids; the keys are opened when they changed. A failed look keeps the JWKS the
 * provider has and is told to `onError`; the next one tries again.
 */
export async function watchSigningKeys (keys: SigningKeys, options: { onChange: (jwks: SigningJwks) => void, onError: (error: unknown) => void, everyMs?: number }): Promise<SigningKeyWatch> {
  await keys.ensure()
  // The kids before the keys: a rotation between the two reads is then seen at the next look.
  let seen = (await keys.liveKids()).join(' ')
  const jwks = await keys.jwks()
  // Looks run one after another: a rotation's refresh never races a timed one to onChange.
  let looking = Promise.resolve()
  const look = async (): Promise<void> => {
    const kids = (await keys.liveKids()).join(' ')
    if (kids === seen) return
    const loaded = await loadSigningKeys(keys)
    seen = kids
    options.onChange(loaded)
  }
  const refresh = async (): Promise<void> => {
    const next = looking.then(look)
    looking = next.catch(() => {})
    await next
  }
  const timed = (): void => { refresh().catch(options.onError) }
  const timer = setInterval(timed, options.everyMs ?? RELOAD_EVERY_MS)
  timer.unref()
  const unsubscribe = keys.onRotated(timed)
  return {
    jwks,
    refresh,
    stop () {
      clearInterval(timer)
      unsubscribe()
    }
  }
}
