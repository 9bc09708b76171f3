import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { createAdminClient } from '../../src/admin/client.js'
import { buildApp } from '../../src/app/app.js'
import { createAdminApiOperations } from '../../src/cli/adapters/admin-api.js'
import { createInProcessOperations } from '../../src/cli/adapters/in-process.js'
import { runAccountCommand, type Terminal } from '../../src/cli/commands.js'
import { describe } from '../../src/cli/exit-codes.js'
import type { AdminOperations } from '../../src/cli/operations.js'
import { parseCommandLine, type AccountInvocation } from '../../src/cli/parse.js'
import { PACKAGE_VERSION } from '../../src/config/version.js'
import { newKeyId } from '../../src/core/api-key-secret.js'
import { loadConfig } from '../../src/config/config.js'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { migratedDatabaseUrl } from '../../support/postgres.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'

/*
 * The command table's contract: the same account and session commands, run as main.ts runs
 * them (parse, the table, the error's line and exit status), against both adapters, on Postgres
 * and Redis: the in-process one (this process opens the database and stores) and the admin API
 * of a running service over HTTP (admin/client.ts). Each case asserts what either must print,
 * and the two adapters' transcripts are compared line for line at the end. Their one intended
 * difference is who the audit trail says made the change ('cli' or 'admin-api').
 */

const KEY = 'contract-admin-key-0123456789-abcdefghijkl'
const PASSWORD = 'a long enough passphrase 1'
const NEW_PASSWORD = 'another long passphrase 2'
const BOB_PASSWORD = 'bob has a passphrase 3'

interface Run {
  code: number
  stdout: string
  stderr: string
}

interface Service {
  /** What `auth-token-service <args>` would do, with `stdin` as its piped lines. */
  run (args: string[], stdin?: string[]): Promise<Run>
  login (username: string, password: string, userAgent?: string): Promise<{ status: number, token?: string }>
  authenticate (token: string | undefined): Promise<number>
  /** The groups Authenticate answers for the token. */
  groupsOf (token: string | undefined): Promise<unknown>
  /** Sets the account's directory groups as a federated Login leaves them (nothing rewritten in the token store). */
  setDirectoryGroups (username: string, groups: string[]): Promise<void>
  /** Gives the account an active second factor, as a confirmed enrollment leaves it (its secret never used here). */
  activateTotp (username: string): Promise<void>
  /** Writes `count` live keys of the account straight into the database (past the per-account cap). */
  insertKeys (username: string, count: number): Promise<void>
}

type Adapter = 'in-process' | 'admin API'

async function serviceFor (t: Test, adapter: Adapter): Promise<Service> {
  const config = loadConfig({
    DATABASE_URL: await migratedDatabaseUrl(t),
    REDIS_URL: await requireRedis(),
    AUTH_REDIS_KEY_PREFIX: await freshRedisPrefix(t),
    AUTH_ADMIN_KEY: KEY,
    // Never a key file in the working directory's ./data.
    AUTH_TOTP_KEY: Buffer.alloc(32, 7).toString('base64'),
    LOG_LEVEL: 'silent',
    NODE_ENV: 'test'
  })
  // The service, on the same database and Redis prefix: it sees what either adapter did.
  const app: FastifyInstance = await buildApp(config)
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => {
    await internal.close()
    await app.close()
  })
  await app.backends.tokens.ready()
  let operations: (invocation: AccountInvocation) => AdminOperations
  if (adapter === 'admin API') {
    const url = await internal.listen({ host: '127.0.0.1', port: 0 })
    const api = createAdminApiOperations(createAdminClient({ url, key: KEY }))
    operations = () => api
  } else {
    operations = (invocation) => createInProcessOperations(config, invocation.command)
  }
  return {
    async run (args, stdin = []) {
      let stdout = ''
      let stderr = ''
      const terminal: Terminal = {
        out: (text) => { stdout += text },
        say: (text) => { stderr += `${text}\n` },
        readPassword: async () => stdin.shift(),
        isTTY: () => false
      }
      try {
        const invocation = parseCommandLine(args)
        if (invocation.command === 'help' || invocation.command === 'version' || invocation.command === 'serve' || invocation.command === 'migrate') throw new Error(`not an account command: ${args.join(' ')}`)
        return { code: await runAccountCommand(operations(invocation), invocation, terminal), stdout, stderr }
      } catch (error) {
        const { message, code } = describe(error)
        return { code, stdout, stderr: `${stderr}auth-token-service: ${message}\n` }
      }
    },
    async login (username, password, userAgent = 'contract/1') {
      const response = await app.inject({ method: 'POST', url: '/auth/Login', headers: { 'user-agent': userAgent }, payload: { username, password } })
      return response.json()
    },
    async authenticate (token) {
      return (await app.inject({ method: 'GET', url: `/auth/Authenticate?token=${encodeURIComponent(token ?? '')}` })).statusCode
    },
    async groupsOf (token) {
      const response = await app.inject({ method: 'GET', url: `/auth/Authenticate?token=${encodeURIComponent(token ?? '')}` })
      return (response.json() as { groups?: unknown }).groups
    },
    async setDirectoryGroups (username, groups) {
      if (await app.backends.groupStore.set(username, 'directory', groups) === null) throw new Error(`no account ${username}`)
    },
    async activateTotp (username) {
      const account = await app.backends.users.findByUsername(username)
      if (account === null) throw new Error(`no account ${username}`)
      await app.backends.totp.begin(account.id, 'v1.00000000.AA.AA', [])
      await app.backends.totp.confirm(account.id, 1)
    },
    async insertKeys (username, count) {
      const account = await app.backends.users.findByUsername(username)
      if (account === null) throw new Error(`no account ${username}`)
      await app.backends.database.query(
        `INSERT INTO api_keys (id, account_id, name, key_hash, expires_at)
         SELECT id, $1, 'bulk', 'h' || id, now() + interval '1 day' FROM unnest($2::text[]) AS k (id)`,
        [account.id, Array.from({ length: count }, () => newKeyId())])
    }
  }
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const lines = (text: string): string[] => text.split('\n').filter((line) => line !== '')
const SESSION_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/

/**
 * The cases, in order, each with what any adapter must do. Returns the transcript: every run's
 * exit status and output, with what differs by nature (times, session ids, the actor) masked.
 */
/** Who an adapter's changes are recorded as: the client address and user agent. */
interface Actor { ip: string, agent: string }

async function commandCases (t: Test, service: Service, actor: Actor): Promise<string[]> {
  const transcript: string[] = []
  const run = async (args: string[], stdin?: string[]): Promise<Run> => {
    const result = await service.run(args, stdin)
    const masked = (text: string): string => text
      .replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z?/g, '<time>')
      .replace(/^[A-Za-z0-9_-]{22}\t/gm, '<session>\t')
      .replace(/atsk_[A-Za-z0-9_-]{45}/g, '<secret>')
      .replace(/^[A-Za-z0-9_-]{16}\t/gm, '<key>\t')
      .replace(/key [A-Za-z0-9_-]{16} /g, 'key <key> ')
      .replace(new RegExp(`\t${escapeRegExp(actor.ip)}\t${escapeRegExp(actor.agent)}$`, 'gm'), '\t<actor>')
    transcript.push(`${args.join(' ').replace(/revoke [A-Za-z0-9_-]{16}$/, 'revoke <key>')} -> ${result.code}\n${masked(result.stdout)}--\n${masked(result.stderr)}`)
    return result
  }
  const succeeded = (t: Test, result: Run, stderr: string): void => {
    t.same([result.code, result.stderr], [0, stderr], 'exit 0, says what it did')
  }

  await t.test('user add: the password from stdin; federated without one; an empty stdin is a usage error', async (t) => {
    const added = await run(['user', 'add', 'alice'], [PASSWORD])
    succeeded(t, added, 'created account alice\n')
    t.equal(added.stdout, '')
    succeeded(t, await run(['user', 'add', 'bob'], [BOB_PASSWORD]), 'created account bob\n')
    succeeded(t, await run(['user', 'add', 'carol', '--federated'], []), 'created federated account carol\n')
    const empty = await run(['user', 'add', 'dave'], [''])
    t.equal(empty.code, 2, 'a usage error')
    t.match(empty.stderr, /^auth-token-service: a password is required on the first line of standard input\nRun 'auth-token-service --help' for usage\.\n$/)
    t.equal((await service.login('alice', PASSWORD)).status, 0, 'alice logs in with it')
  })

  await t.test('user add --service: no password read, a service account that cannot log in', async (t) => {
    const added = await run(['user', 'add', 'svc', '--service'], ['would-be password'])
    succeeded(t, added, 'created service account svc\n')
    t.equal((await service.login('svc', 'would-be password')).status, 701, 'no Login')
    const both = await run(['user', 'add', 'svc2', '--service', '--federated'])
    t.equal(both.code, 2, '--service with --federated is a usage error')
    const list = await run(['user', 'list'])
    t.ok(lines(list.stdout).includes('svc\tservice\tenabled'), 'listed as a service account')
  })

  await t.test('keys create, list, revoke: the secret alone on stdout\'s last line, ended at once', async (t) => {
    const made = await run(['keys', 'create', 'svc', '--name', 'deploy', '--days', '30'])
    t.equal(made.code, 0, made.stderr)
    const secret = lines(made.stdout).at(-1) ?? ''
    t.match(secret, /^atsk_[A-Za-z0-9_-]{45}$/, 'the secret, alone on the last line')
    t.equal(lines(made.stdout).length, 1, 'nothing else on stdout')
    t.match(made.stderr, /^created key [A-Za-z0-9_-]{16} \(deploy\) for svc, expires /)
    t.equal(await service.authenticate(secret), 200, 'the key works at once')
    const list = await run(['keys', 'list', 'svc'])
    const rows = lines(list.stdout).map((row) => row.split('\t'))
    t.equal(rows.length, 1)
    t.equal(rows[0]?.[1], 'deploy')
    t.notOk(list.stdout.includes(secret.slice(7)), 'a listing never shows the secret')
    const id = rows[0]?.[0] ?? ''
    succeeded(t, await run(['keys', 'revoke', id]), `key ${id} (deploy) revoked\n`)
    t.equal(await service.authenticate(secret), 403, 'ended at once')
    t.same(lines((await run(['keys', 'list', 'svc'])).stdout), [])
    t.equal((await run(['keys', 'create', 'svc'])).code, 2, 'no --name: a usage error')
    t.same(await run(['keys', 'revoke', 'AAAAAAAAAAAAAAAA']), { code: 1, stdout: '', stderr: 'auth-token-service: no such key\n' })
    // An id made before ids stopped starting with a dash (one in 64 did) is still an id here, not an option.
    t.same(await run(['keys', 'revoke', '-Cp6x1VPXbdHMQo-']), { code: 1, stdout: '', stderr: 'auth-token-service: no such key\n' }, 'an id that starts with a dash')
    // More than a page (the admin client and the in-process adapter read 1,000 a page).
    await service.insertKeys('svc', 1001)
    const many = await run(['keys', 'list', 'svc'])
    t.equal(many.code, 0)
    t.equal(new Set(lines(many.stdout).map((row) => row.split('\t')[0])).size, 1001, 'every key once, page after page')
  })

  await t.test('user list: one account per line, username order', async (t) => {
    const list = await run(['user', 'list'])
    t.same([list.code, list.stderr], [0, ''])
    t.same(lines(list.stdout), ['alice\tlocal\tenabled', 'bob\tlocal\tenabled', 'carol\tfederated\tenabled', 'svc\tservice\tenabled'])
  })

  await t.test('refusals: exit 1 and one line, the same for either adapter', async (t) => {
    const taken = await run(['user', 'add', 'alice'], [PASSWORD])
    t.equal(taken.code, 1)
    t.match(taken.stderr, /^auth-token-service: (that )?username is taken\n$/)
    t.same(await run(['user', 'disable', 'nobody']), { code: 1, stdout: '', stderr: 'auth-token-service: no such account\n' })
    t.same(await run(['sessions', 'list', 'nobody']), { code: 1, stdout: '', stderr: 'auth-token-service: no such account\n' })
    t.same(await run(['user', 'passwd', 'alice'], ['short']), { code: 1, stdout: '', stderr: 'auth-token-service: password is shorter than 8 characters\n' })
    t.equal((await service.login('alice', PASSWORD)).status, 0, 'the refused password changed nothing')
  })

  await t.test('sessions list: id, created, last refresh, IP, user agent (escaped), expiry', async (t) => {
    await service.login('bob', BOB_PASSWORD, 'curl/8\tx')
    const list = await run(['sessions', 'list', 'bob'])
    t.same([list.code, list.stderr], [0, ''])
    const rows = lines(list.stdout)
    t.equal(rows.length, 1, 'one session')
    const [id, created, refreshed, ip, userAgent, expires] = rows[0]?.split('\t') ?? []
    t.match(id, /^[A-Za-z0-9_-]{22}$/)
    t.match(created, SESSION_DATE)
    t.equal(refreshed, '-', 'never refreshed')
    t.equal(ip, '127.0.0.1')
    t.equal(userAgent, 'curl/8\\u0009x', 'its tab forges no cell')
    t.match(expires, SESSION_DATE)
  })

  await t.test('user passwd, disable, enable, sessions revoke: end the tokens at once', async (t) => {
    const first = await service.login('alice', PASSWORD)
    succeeded(t, await run(['user', 'passwd', 'alice'], [NEW_PASSWORD]), 'password changed for alice; 3 active token(s) ended\n')
    t.equal(await service.authenticate(first.token), 403)
    t.equal((await service.login('alice', PASSWORD)).status, 701)
    const second = await service.login('alice', NEW_PASSWORD)
    t.equal(second.status, 0)
    succeeded(t, await run(['user', 'disable', 'alice']), 'alice disabled; 1 active token(s) ended\n')
    t.equal(await service.authenticate(second.token), 403)
    t.same(lines((await run(['user', 'list'])).stdout)[0], 'alice\tlocal\tdisabled')
    succeeded(t, await run(['user', 'enable', 'alice']), 'alice enabled\n')
    const third = await service.login('alice', NEW_PASSWORD)
    t.equal(third.status, 0)
    succeeded(t, await run(['sessions', 'revoke', 'alice']), '1 active token(s) of alice ended\n')
    t.equal(await service.authenticate(third.token), 403)
  })

  await t.test('user unlock lifts the lock failed logins put; user delete ends the tokens', async (t) => {
    for (let i = 0; i < 10; i++) await service.login('bob', 'wrong password')
    t.equal((await service.login('bob', BOB_PASSWORD)).status, 429, 'locked')
    succeeded(t, await run(['user', 'unlock', 'bob']), 'bob unlocked\n')
    const bob = await service.login('bob', BOB_PASSWORD)
    t.equal(bob.status, 0, 'unlocked')
    succeeded(t, await run(['user', 'delete', 'bob']), 'bob deleted; 2 active token(s) ended\n')
    t.equal(await service.authenticate(bob.token), 403)
    t.same(lines((await run(['user', 'list'])).stdout), ['alice\tlocal\tenabled', 'carol\tfederated\tenabled', 'svc\tservice\tenabled'])
  })

  await t.test('user totp-reset removes the second factor: the password alone logs in again', async (t) => {
    await service.activateTotp('alice')
    t.equal((await service.login('alice', NEW_PASSWORD)).status, 702, 'a second factor: 702 without a code')
    succeeded(t, await run(['user', 'totp-reset', 'ALICE']), 'alice\'s second factor removed: the password alone logs in until it enrolls again\n')
    t.equal((await service.login('alice', NEW_PASSWORD)).status, 0, 'the password alone')
    const unknown = await run(['user', 'totp-reset', 'nobody'])
    t.equal(unknown.code, 1, 'an unknown account: exit 1')
  })

  await t.test('groups add, remove, list: the whole local set written, the live token sees it at once', async (t) => {
    t.same(await run(['groups', 'list']), { code: 0, stdout: '', stderr: '' }, 'no group yet')
    const { token } = await service.login('alice', NEW_PASSWORD)
    succeeded(t, await run(['groups', 'add', 'alice', 'ops']), 'alice added to ops; alice\'s groups: ops\n')
    t.same(await service.groupsOf(token), ['ops'], 'the live token carries it at once')
    succeeded(t, await run(['groups', 'add', 'ALICE', 'dev']), 'alice added to dev; alice\'s groups: dev, ops\n')
    succeeded(t, await run(['groups', 'add', 'alice', 'ops']), 'alice was in ops already; alice\'s groups: dev, ops\n')
    succeeded(t, await run(['groups', 'add', 'carol', 'ops']), 'carol added to ops; carol\'s groups: ops\n')
    t.same(lines((await run(['groups', 'list'])).stdout), ['dev\t1', 'ops\t2'], 'every group and its number of members')
    t.same(await run(['groups', 'list', 'alice']), { code: 0, stdout: 'dev\tlocal\nops\tlocal\n', stderr: '' })

    succeeded(t, await run(['groups', 'remove', 'alice', 'ops']), 'alice removed from ops; alice\'s groups: dev\n')
    t.same(await service.groupsOf(token), ['dev'], 'gone from the live token at once')
    succeeded(t, await run(['groups', 'remove', 'alice', 'ops']), 'alice was not in ops; alice\'s groups: dev\n')
    t.same(lines((await run(['groups', 'list'])).stdout), ['dev\t1', 'ops\t1'])

    const badName = 'auth-token-service: groups holds a name that is not a group name: 1 to 64 characters of a-z, 0-9, ".", "_" and "-", starting with a letter or a digit\n'
    t.same(await run(['groups', 'add', 'alice', 'Ops']), { code: 1, stdout: '', stderr: badName }, 'a bad name: the service\'s detail')
    t.same(await run(['groups', 'remove', 'alice', 'Ops']), { code: 1, stdout: '', stderr: badName }, 'the same when removing it')
    for (const args of [['groups', 'add', 'nobody', 'ops'], ['groups', 'remove', 'nobody', 'ops'], ['groups', 'list', 'nobody']]) {
      t.same(await run(args), { code: 1, stdout: '', stderr: 'auth-token-service: no such account\n' }, `${args.join(' ')}: as the other commands`)
    }
    t.equal((await run(['groups', 'add', 'alice'])).code, 2, 'no group: a usage error')
    t.same(await service.groupsOf(token), ['dev'], 'no refusal changed anything')
    succeeded(t, await run(['groups', 'remove', 'alice', 'dev']), 'alice removed from dev; alice is in no group\n')
    t.same(await run(['groups', 'list', 'alice']), { code: 0, stdout: '', stderr: '' })
    t.same(await service.groupsOf(token), [])
  })

  await t.test('groups of a federated account: the directory\'s marked, and left to the directory', async (t) => {
    await service.setDirectoryGroups('carol', ['staff', 'vpn'])
    t.same(await run(['groups', 'list', 'carol']), { code: 0, stdout: 'ops\tlocal\nstaff\tdirectory\nvpn\tdirectory\n', stderr: '' })
    succeeded(t, await run(['groups', 'add', 'carol', 'dev']), 'carol added to dev; carol\'s groups: dev, ops, staff (directory), vpn (directory)\n')
    succeeded(t, await run(['groups', 'add', 'carol', 'staff']), 'carol was in staff through the directory already; carol\'s groups: dev, ops, staff (directory), vpn (directory)\n')
    t.same(await run(['groups', 'remove', 'carol', 'staff']), {
      code: 1,
      stdout: '',
      stderr: 'auth-token-service: carol is in staff through the directory, which alone can take it out (at the account\'s next Login); carol\'s groups: dev, ops, staff (directory), vpn (directory)\n'
    })
    succeeded(t, await run(['groups', 'remove', 'carol', 'ops']), 'carol removed from ops; carol\'s groups: dev, staff (directory), vpn (directory)\n')
    t.same(await run(['groups', 'list', 'carol']), { code: 0, stdout: 'dev\tlocal\nstaff\tdirectory\nvpn\tdirectory\n', stderr: '' }, 'the directory\'s groups untouched')
    t.same(lines((await run(['groups', 'list'])).stdout), ['dev\t1', 'staff\t1', 'vpn\t1'])
    // The directory drops staff at carol's next Login: none of the changes above made it a local group of hers.
    await service.setDirectoryGroups('carol', ['vpn'])
    t.same(await run(['groups', 'list', 'carol']), { code: 0, stdout: 'dev\tlocal\nvpn\tdirectory\n', stderr: '' }, 'out of a group the directory dropped')
  })

  await t.test('events: oldest first, filtered by user and time, with who made each change', async (t) => {
    const events = await run(['events', '--user', 'BOB'])
    t.same([events.code, events.stderr], [0, ''])
    const rows = lines(events.stdout).map((line) => line.split('\t'))
    t.ok(rows.every((row) => row.length === 6 && row[2] === 'bob'), 'time, event, username, outcome, client IP, user agent; bob\'s only')
    const administration = rows.filter((row) => row[1]?.startsWith('user.'))
    t.same(administration.map((row) => [row[1], row[3], row[4], row[5]]), [
      ['user.add', 'created', actor.ip, actor.agent],
      ['user.unlock', 'unlocked', actor.ip, actor.agent],
      ['user.delete', 'tokens-ended-2', actor.ip, actor.agent]
    ], 'made by this adapter\'s actor')
    t.ok(rows.some((row) => row[1] === 'login.success' && row[4] === '127.0.0.1' && row[5] === 'curl/8\\u0009x'), 'a Login: its client, escaped')
    t.match(rows[0]?.[0], /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'ISO 8601 UTC')
    t.notOk(events.stdout.includes(BOB_PASSWORD), 'no password in the trail')
    const changes = lines((await run(['events', '--user', 'alice'])).stdout).map((line) => line.split('\t')).filter((row) => row[1] === 'groups.change')
    t.same(changes.map((row) => [row[3], row[4], row[5]]), [
      ['set:ops', actor.ip, actor.agent],
      ['set:dev,ops', actor.ip, actor.agent],
      ['set:dev', actor.ip, actor.agent],
      ['set:', actor.ip, actor.agent]
    ], 'each change of alice\'s groups, by this adapter\'s actor; none for what changed nothing')
    const none = await run(['events', '--since', '2999-01-01'])
    t.same(none, { code: 0, stdout: '', stderr: '' }, 'nothing after --since')
  })

  return transcript
}

t.test('both adapters run the same commands alike', async (t) => {
  const transcripts: Partial<Record<Adapter, string[]>> = {}
  const actors: Array<[Adapter, Actor]> = [
    ['in-process', { ip: '-', agent: 'cli' }],
    ['admin API', { ip: '127.0.0.1', agent: `auth-token-service-admin-client/${PACKAGE_VERSION}` }]
  ]
  for (const [adapter, actor] of actors) {
    await t.test(`through the ${adapter} adapter`, async (t) => {
      transcripts[adapter] = await commandCases(t, await serviceFor(t, adapter), actor)
    })
  }
  const [inProcess, adminApi] = [transcripts['in-process'] ?? [], transcripts['admin API'] ?? []]
  t.ok(inProcess.length >= 20, `${inProcess.length} runs`)
  // The duplicate's wording is the one line the two still say differently (exit 1 both).
  const alike = (text: string): string => text.replace('auth-token-service: that username is taken', 'auth-token-service: username is taken')
  t.same(adminApi.map(alike), inProcess.map(alike), 'the same exit statuses and output, run for run')
})
