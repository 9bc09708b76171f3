import type { AccountAdmin, AccountView } from '../../core/accounts.js'
import { eventView } from '../../admin/views.js'
import { keyView } from '../../api-keys/views.js'
import { sessionView } from '../../sessions/view.js'
import type { ApiKeys, KeyActor } from '../../api-keys/api-keys.js'
import type { Backends, ServiceTokenStore } from '../../app/backends.js'
import type { Config } from '../../config/config.js'
import { normalizeUsername } from '../../core/credentials.js'
import { assertDataDirFree } from '../../db/data-dir-lock.js'
import type { Database } from '../../db/database.js'
import { withTimeout } from '@auth-token-service/protocol/time-limit'
import { Failure, unreachable } from '../exit-codes.js'
import { reasons } from '../../errors/reasons.js'
import type { AccountGroups, AdminOperations } from '../operations.js'
import type { AdminKey } from '../../admin/client.js'
import type { clientView, OidcClients } from '../../oidc/index.js'

// The drivers (PGlite, pg, ioredis, ldapts, the argon2 binding) are loaded when an operation runs,
// so `--help` and a usage error stay cheap.

const quietLog = {
  info: () => {},
  warn: (o: unknown, message?: string) => { process.stderr.write(`warning: ${message ?? String(o)}\n`) },
  error: (o: unknown, message?: string) => { process.stderr.write(`error: ${message ?? String(o)}\n`) }
}

/**
 * The token store for commands that end tokens, connected before anything changes:
 * the Redis client does not queue commands while it connects, so acting first would
 * change the account and then fail to end its tokens (or fail a revoke outright).
 */
async function openConnectedTokenStore (config: Config, database: Database): Promise<ServiceTokenStore> {
  const { openTokenStore } = await import('../../app/backends.js')
  if (config.redis === undefined) {
    // On the embedded database this process holds the data directory, so no service runs on these
    // accounts and their in-process tokens ended with it; on Postgres one may run, out of reach.
    if (database.kind === 'postgres') {
      process.stderr.write('warning: REDIS_URL is not set: tokens live inside the serving process, which this command cannot reach; ' +
        'restart a running service to end them\n')
    }
    return openTokenStore(config, quietLog)
  }
  const store = openTokenStore(config, quietLog)
  const waitMs = Math.max(2000, 4 * config.redisCommandTimeoutMs)
  try {
    await withTimeout(store.ready(), waitMs, () => { throw new Error('timeout') })
  } catch {
    await store.close()
    throw new Failure(`Redis cannot be reached (${config.redis.kind}) within ${waitMs} ms; nothing was changed`)
  }
  return store
}

/**
 * Runs `work` on the accounts. The database is opened first: on the embedded one that takes
 * its directory, or refuses at once (exit 1) while the service or another command has it.
 */
async function withAccounts<T> (config: Config, command: string, endsTokens: boolean, work: (admin: AccountAdmin, backends: Backends, apiKeys: ApiKeys) => Promise<T>): Promise<T> {
  const [{ openDatabase }, { migrateOrCheck }, { assembleBackends, openAuditLog }, { createMemoryTokenStore }, { createAccountAdmin, LOCAL_CLI_ACTOR }, { configuredPasswordPolicy }] = await Promise.all([
    import('../../db/open.js'), import('../../core/migrate.js'), import('../../app/backends.js'), import('../../core/stores/memory/token-store.js'), import('../../core/accounts.js'),
    import('../../passwords/policy.js')
  ])
  const { createApiKeys } = await import('../../api-keys/api-keys.js')
  // With mail on, an invitation is queued in the outbox the service's worker sends from.
  const mail = config.mail
  const invitations = mail === undefined
    ? undefined
    : await Promise.all([import('../../recovery/index.js'), import('../../totp/index.js')]).then(([recovery, totp]) => ({ recovery, totp }))
  const database = await openDatabase(config, { command })
  let backends: Backends | undefined
  try {
    try {
      await migrateOrCheck(database)
    } catch (error) {
      throw unreachable('the database (DATABASE_URL)', error)
    }
    // Commands that end no tokens get an empty in-process store: nothing to connect to, nothing to end.
    const tokens = endsTokens ? await openConnectedTokenStore(config, database) : createMemoryTokenStore({ denyTtlMs: 1000 })
    // The service's own assembly: the same stores, and the hasher at the configured argon2 policy.
    backends = assembleBackends(config, { database, tokens, audit: openAuditLog(config, database, quietLog), log: quietLog })
    const { audit } = backends
    try {
      const apiKeys = createApiKeys({ store: backends.apiKeyStore, tokens: backends.tokens, audit, maxDays: config.apiKeyMaxDays, maxPerAccount: config.apiKeysPerAccount, flushEveryMs: 0 })
      const sender = mail === undefined || invitations === undefined
        ? undefined
        : invitations.recovery.createInvitationSender({ store: invitations.recovery.createSqlRecoveryStore(database), keys: invitations.totp.totpKeySource(config, quietLog), inviteTtlMs: mail.inviteTtlMs })
      return await work(createAccountAdmin({ ...backends, actor: LOCAL_CLI_ACTOR, passwordPolicy: configuredPasswordPolicy(config.passwordMinLength), apiKeys, keyHashes: apiKeys, invitations: sender }), backends, apiKeys)
    } finally {
      await audit.close()
    }
  } finally {
    if (backends === undefined) await database.close()
    else await backends.close()
  }
}

/**
 * The operations on the database and stores themselves, for when no service runs to ask
 * (cli/admin-route.ts): each one opens them for `command`, the one command this process runs.
 * Those that end tokens or lift a lock connect the token store first (locks live beside the
 * tokens: in Redis, or, embedded with no service running, nowhere any more).
 */
/** accounts.ts's LOCAL_CLI_ACTOR, for the key and client commands' audit events (accounts.ts is loaded lazily). */
const CLI_KEY_ACTOR: KeyActor = Object.freeze({ userAgent: 'cli', credential: 'local-cli' })
/** Keys a page of `keys list` reads (the admin API's largest page). */
const KEY_PAGE = 1000

export function createInProcessOperations (config: Config, command: string): AdminOperations {
  const accounts = <T>(endsTokens: boolean, work: (admin: AccountAdmin, backends: Backends, apiKeys: ApiKeys) => Promise<T>): Promise<T> =>
    withAccounts(config, command, endsTokens, work)
  /** The provider's clients, refused as the admin API refuses them while the provider is off (before the database is opened). */
  const clients = async <T>(endsTokens: boolean, work: (clients: OidcClients, view: typeof clientView) => Promise<T>): Promise<T> => {
    const { createOidcClients, clientView, clientRemovalsOf, endClientTokens, providerOff } = await import('../../oidc/index.js')
    if (config.oidc === undefined) throw providerOff()
    return await accounts(endsTokens, async (_admin, backends) => await work(createOidcClients({
      store: backends.oidcClientStore,
      audit: backends.audit,
      onRemoved: endClientTokens(backends.tokens, config.redisKeyPrefix),
      // Marked where the running instances look: they may hold the client in memory.
      removals: clientRemovalsOf(backends.tokens, config.redisKeyPrefix)
    }), clientView))
  }
  const ended = ({ account, ended }: { account: { username: string }, ended: number }) => ({ username: account.username, ended })
  return {
    async beforePassword () {
      // On the embedded database: refuses at once while another process has its directory.
      if (config.databaseUrl === undefined) await assertDataDirFree(config.dataDir, command)
    },
    addUser: async (username, password, federated, kind) => await accounts(false, async (admin) => await admin.add(username, password, federated, kind)),
    setPassword: async (username, password) => await accounts(true, async (admin) => ended(await admin.setPassword(username, password))),
    setDisabled: async (username, disabled) => await accounts(disabled, async (admin) => ended(await admin.setDisabled(username, disabled))),
    unlockUser: async (username) => await accounts(true, async (admin) => await admin.unlock(username)),
    resetTotp: async (username) => await accounts(false, async (admin) => await admin.resetSecondFactor(username)),
    setEmail: async (username, email) => await accounts(false, async (admin) => await admin.setEmail(username, email)),
    inviteUser: async (username, email) => await accounts(false, async (admin) => await admin.invite(username, email)),
    deleteUser: async (username) => await accounts(true, async (admin) => ended(await admin.remove(username))),
    async * users () {
      yield * await accounts(false, async (admin) => await admin.list())
    },
    async sessions (username) {
      const { createSqlSessions } = await import('../../sessions/sql-sessions.js')
      return await accounts(true, async (admin, backends) => {
        const account = await admin.show(username)
        const sessions = createSqlSessions({ db: backends.database, tokens: backends.tokens, audit: backends.audit })
        return (await sessions.list(account.id)).map(sessionView)
      })
    },
    revokeSessions: async (username) => await accounts(true, async (admin) => ended(await admin.revokeSessions(username))),
    // Keys' records live in the token store: these connect it, as the commands that end tokens do.
    createKey: async (username, name, days) => await accounts(true, async (admin, _backends, apiKeys) => {
      const { key, secret } = await apiKeys.create(await admin.show(username), name, days, CLI_KEY_ACTOR)
      return { key: keyView(key), secret }
    }),
    async * keys (username) {
      // Page by page over one connection, as the admin API's client pages over HTTP.
      const found = await accounts(false, async (admin, _backends, apiKeys) => {
        const { id } = await admin.show(username)
        const all: AdminKey[] = []
        let after: string | undefined
        do {
          const page = await apiKeys.page(id, after, KEY_PAGE)
          all.push(...page.keys.map(keyView))
          after = page.next
        } while (after !== undefined)
        return all
      })
      yield * found
    },
    revokeKey: async (id) => await accounts(true, async (_admin, _backends, apiKeys) => keyView(await apiKeys.revoke(id, CLI_KEY_ACTOR))),
    accountGroups: async (username) => await accounts(false, async (admin) => groupsOf(await admin.show(username))),
    // A change of groups rewrites the account's live token and key records: the token store is connected first.
    changeLocalGroups: async (username, change) => await accounts(true, async (admin) => {
      const before = groupsOf(await admin.show(username))
      const after = groupsOf(await admin.setGroups(before.username, change(before)))
      return { before, after }
    }),
    groups: async () => await accounts(false, async (admin) => await admin.groups()),
    async rotateSigningKeys () {
      const { oidc } = config
      if (oidc === undefined) throw new Failure(reasons.oidcOff())
      const rotated = await accounts(false, async (_admin, { database }) => {
        const [{ createSigningKeys, createSqlSigningKeyStore, rotatedKeysView }, { totpKeySource }] = await Promise.all([import('../../oidc/index.js'), import('../../totp/index.js')])
        const keys = createSigningKeys({ store: createSqlSigningKeyStore(database), sealing: totpKeySource(config, quietLog), idTokenTtlSeconds: oidc.idTokenTtlSeconds })
        return rotatedKeysView(await keys.rotate())
      })
      if (config.databaseUrl !== undefined) {
        process.stderr.write('note: a service running on this database signs with the new keys within a minute (at once when the command goes through its admin API: AUTH_ADMIN_URL)\n')
      }
      return rotated
    },
    async * events ({ user, since }) {
      const found = await accounts(false, async (_admin, { audit }) => await audit.list({ username: user === undefined ? undefined : normalizeUsername(user), since, limit: 100_000 }))
      yield * found.map(eventView)
    },
    addOidcClient: async (client) => await clients(false, async (oidcClients, view) => {
      const { client: made, secret } = await oidcClients.create({
        name: client.name,
        redirectUris: client.redirect_uris,
        postLogoutRedirectUris: client.post_logout_redirect_uris,
        public: client.public,
        backchannelLogoutUri: client.backchannel_logout_uri
      }, CLI_KEY_ACTOR)
      return { client: view(made), secret }
    }),
    oidcClients: async () => await clients(false, async (oidcClients, view) => (await oidcClients.list()).map(view)),
    // A removal ends the client's tokens: the token store connected first, as for the commands that end tokens.
    removeOidcClient: async (clientId) => await clients(true, async (oidcClients, view) => view(await oidcClients.remove(clientId, CLI_KEY_ACTOR)))
  }
}

/** An account's groups as the commands show them. */
const groupsOf = (account: AccountView): AccountGroups => ({ username: account.username, groups: account.groups, directoryGroups: account.directoryGroups })
