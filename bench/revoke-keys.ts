/*
 * How long ending every API key of one account takes (a revoke-all or a disable), on the test
 * Postgres and Redis: keys written straight into api_keys and seeded in the token store (so
 * more than the per-account cap can be held, as before the cap existed), then endAccount timed
 * as the admin API runs it (the Postgres UPDATE, the token store's step, the audit events
 * queued). Medians of a few runs per size; the audit trail is flushed outside the timing.
 *
 *   node --conditions=@auth-token-service/source --import @tapjs/typescript/import bench/revoke-keys.ts [--sizes 50,1000] [--runs 5]
 */
import { performance } from 'node:perf_hooks'
import { createPostgresDatabase } from '../src/db/postgres.js'
import { createApiKeys, keyRecord } from '../src/api-keys/api-keys.js'
import { generateApiKey, hashApiKey, newKeyId } from '../src/core/api-key-secret.js'
import { createSqlApiKeyStore } from '../src/api-keys/store.js'
import { createSqlAuditLog } from '../src/core/stores/audit-log.js'
import { createRedisTokenStore } from '../src/core/stores/redis/token-store.js'
import { createSqlUserStore } from '../src/core/stores/user-store.js'
import { migratedDatabaseUrl } from '../support/postgres.js'
import { freshRedisPrefix, requireRedis } from '../support/redis.js'

const argument = (name: string, fallback: string): string => {
  const at = process.argv.indexOf(name)
  return at > 0 ? process.argv[at + 1] ?? fallback : fallback
}
const SIZES = argument('--sizes', '50,1000').split(',').map(Number)
const RUNS = Number(argument('--runs', '5'))

const teardowns: Array<() => unknown> = []
const scope = { teardown: (fn: () => unknown) => { teardowns.push(fn) } }

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? NaN
}

try {
  const database = createPostgresDatabase({ connectionString: await migratedDatabaseUrl(scope) })
  teardowns.unshift(async () => { await database.close() })
  const tokens = createRedisTokenStore({ url: await requireRedis(), keyPrefix: await freshRedisPrefix(scope), denyTtlMs: 300_000, commandTimeoutMs: 10_000 })
  teardowns.unshift(async () => { await tokens.close() })
  await tokens.ready()
  const users = createSqlUserStore(database)
  const store = createSqlApiKeyStore(database)
  const audit = createSqlAuditLog(database)
  const apiKeys = createApiKeys({ store, tokens, audit, maxDays: 365, flushEveryMs: 0 })
  const expiresAt = new Date(Date.now() + 86_400_000)

  console.log('| keys | endAccount median (ms) | runs (ms) |\n|---:|---:|---|')
  for (const size of SIZES) {
    const runs: number[] = []
    for (let run = 0; run < RUNS; run++) {
      const account = await users.create({ username: `keys-${size}-${run}`, passwordHash: null, federated: false, kind: 'service' })
      const secrets = Array.from({ length: size }, () => generateApiKey(account.id))
      await database.query(
        `INSERT INTO api_keys (id, account_id, name, key_hash, expires_at)
         SELECT id, $1, 'bench', hash, $4 FROM unnest($2::text[], $3::text[]) AS k (id, hash)`,
        [account.id, secrets.map(() => newKeyId()), secrets.map(hashApiKey), expiresAt.toISOString()])
      const seeded = await Promise.all(secrets.map(async (secret) => await tokens.seedKey(hashApiKey(secret),
        keyRecord({ id: 'x', accountId: account.id, username: account.username, name: 'bench', keyHash: hashApiKey(secret), createdAt: new Date(), expiresAt, lastUsedAt: null, endedAt: null, groups: [], groupsVersion: 0 }), 3_600_000)))
      if (!seeded.every(Boolean)) throw new Error('a key was not seeded')
      const started = performance.now()
      const ended = await apiKeys.endAccount(account, { userAgent: 'bench' }, 'revoke-all')
      runs.push(performance.now() - started)
      if (ended !== size) throw new Error(`${ended} of ${size} keys ended`)
      const left = await Promise.all(secrets.map(async (secret) => await tokens.find(hashApiKey(secret))))
      if (left.some((record) => record !== null)) throw new Error('a key record outlived endAccount')
      await audit.flush()
    }
    console.log(`| ${size.toLocaleString('en')} | ${median(runs).toFixed(1)} | ${runs.map((ms) => ms.toFixed(1)).join(', ')} |`)
  }
  await audit.close()
  await apiKeys.close()
} finally {
  for (const teardown of teardowns) await teardown()
}
