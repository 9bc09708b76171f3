import type { JsonWebKey } from 'node:crypto'
import type { Database } from '../db/database.js'

/** The algorithms the provider signs with: RS256 (every client's default) and ES256. */
export const SIGNING_ALGS = ['RS256', 'ES256'] as const
export type SigningAlg = typeof SIGNING_ALGS[number]

/** A signing key as the table holds it (sql/015-oidc-signing-keys.sql). */
export interface StoredSigningKey {
  /** The RFC 7638 thumbprint of the public key. */
  kid: string
  alg: SigningAlg
  publicJwk: JsonWebKey
  /** The private JWK, sealed (signing-keys.ts): never in the clear. */
  sealedPrivate: string
  createdAt: Date
  /** Null: current, signs what the provider signs now. */
  retiredAt: Date | null
}

export type NewSigningKey = Pick<StoredSigningKey, 'kid' | 'alg' | 'publicJwk' | 'sealedPrivate'>

/** The signing keys' table, on Postgres or PGlite. */
export interface SigningKeyStore {
  /** The algorithms that have a current key. */
  currentAlgs (): Promise<SigningAlg[]>
  /**
   * Adds each key as its algorithm's current one unless the algorithm has one already (made by
   * an instance that started at the same time): the kids added.
   */
  addFirst (keys: readonly NewSigningKey[], at: Date): Promise<string[]>
  /**
   * Retires every current key and adds `keys` as the current ones, in one transaction that a
   * concurrent rotation waits for; deletes the keys retired before `dropRetiredBefore`, which no
   * JWKS holds any more. The keys it retired.
   */
  rotate (keys: readonly NewSigningKey[], at: Date, dropRetiredBefore: Date): Promise<StoredSigningKey[]>
  /** The keys the JWKS holds: current, or retired after `retiredAfter`; the current first, RS256 before ES256, newer before older. */
  live (retiredAfter: Date): Promise<StoredSigningKey[]>
  /** The kids of `live`, in its order, read without the sealed parts: what a reload compares. */
  liveKids (retiredAfter: Date): Promise<string[]>
  /** Replaces a key's sealed private part, unless it changed since it was read as `from`. */
  reseal (kid: string, from: string, to: string): Promise<void>
}

interface Row {
  kid: string
  alg: string
  public_jwk: JsonWebKey | string
  sealed_private: string
  created_at: Date | string
  retired_at: Date | string | null
}

// Any constant: the same for every instance rotating the keys of one database.
const ROTATION_LOCK_ID = 72_403_145

const LIVE = 'WHERE retired_at IS NULL OR retired_at > $1 ORDER BY retired_at IS NULL DESC, retired_at DESC, alg = \'RS256\' DESC, created_at DESC, kid'

const isAlg = (alg: string): alg is SigningAlg => (SIGNING_ALGS as readonly string[]).includes(alg)

function signingKey (row: Row): StoredSigningKey {
  if (!isAlg(row.alg)) throw new Error(`oidc_signing_keys holds a key of an unknown algorithm: ${row.alg}`)
  return {
    kid: row.kid,
    alg: row.alg,
    // jsonb arrives parsed from pg and PGlite alike; text is read too, should a driver hand it over as such.
    publicJwk: typeof row.public_jwk === 'string' ? JSON.parse(row.public_jwk) as JsonWebKey : row.public_jwk,
    sealedPrivate: row.sealed_private,
    createdAt: new Date(row.created_at),
    retiredAt: row.retired_at === null ? null : new Date(row.retired_at)
  }
}

/** `INSERT` values for `keys`, their parameters numbered from 1, all made at `at`. */
function values (keys: readonly NewSigningKey[], at: Date): { sql: string, params: unknown[] } {
  const params: unknown[] = []
  const rows = keys.map((key) => {
    params.push(key.kid, key.alg, JSON.stringify(key.publicJwk), key.sealedPrivate, at)
    const n = params.length
    return `($${n - 4}, $${n - 3}, $${n - 2}::jsonb, $${n - 1}, $${n})`
  })
  return { sql: rows.join(', '), params }
}

const COLUMNS = 'kid, alg, public_jwk, sealed_private, created_at'

export function createSqlSigningKeyStore (db: Database): SigningKeyStore {
  return {
    async currentAlgs () {
      const { rows } = await db.query<{ alg: string }>('SELECT alg FROM oidc_signing_keys WHERE retired_at IS NULL')
      return rows.map((row) => row.alg).filter(isAlg)
    },
    async addFirst (keys, at) {
      if (keys.length === 0) return []
      const { sql, params } = values(keys, at)
      // The partial unique index (one current key per algorithm) settles a race between starts.
      const { rows } = await db.query<{ kid: string }>(
        `INSERT INTO oidc_signing_keys (${COLUMNS}) VALUES ${sql} ON CONFLICT (alg) WHERE retired_at IS NULL DO NOTHING RETURNING kid`, params)
      return rows.map((row) => row.kid)
    },
    async rotate (keys, at, dropRetiredBefore) {
      return await db.transaction(async (tx) => {
        // Without the lock, a second rotation's UPDATE would not see the first one's new keys
        // (they were not committed when it began) and its INSERT would then break the one-current rule.
        await tx.query('SELECT pg_advisory_xact_lock($1)', [ROTATION_LOCK_ID])
        const retired = await tx.query<Row>(`UPDATE oidc_signing_keys SET retired_at = $1 WHERE retired_at IS NULL RETURNING ${COLUMNS}, retired_at`, [at])
        await tx.query('DELETE FROM oidc_signing_keys WHERE retired_at < $1', [dropRetiredBefore])
        if (keys.length > 0) {
          const { sql, params } = values(keys, at)
          await tx.query(`INSERT INTO oidc_signing_keys (${COLUMNS}) VALUES ${sql}`, params)
        }
        return retired.rows.map(signingKey).sort((a, b) => SIGNING_ALGS.indexOf(a.alg) - SIGNING_ALGS.indexOf(b.alg))
      })
    },
    async live (retiredAfter) {
      const { rows } = await db.query<Row>(`SELECT ${COLUMNS}, retired_at FROM oidc_signing_keys ${LIVE}`, [retiredAfter])
      return rows.map(signingKey)
    },
    async liveKids (retiredAfter) {
      const { rows } = await db.query<{ kid: string }>(`SELECT kid FROM oidc_signing_keys ${LIVE}`, [retiredAfter])
      return rows.map((row) => row.kid)
    },
    async reseal (kid, from, to) {
      await db.query('UPDATE oidc_signing_keys SET sealed_private = $3 WHERE kid = $1 AND sealed_private = $2', [kid, from, to])
    }
  }
}
