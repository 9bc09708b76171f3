import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { createAdminClient } from '../../src/admin/client.js'
import { buildApp } from '../../src/app/app.js'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { createAdminApiOperations } from '../../src/cli/adapters/admin-api.js'
import { createInProcessOperations } from '../../src/cli/adapters/in-process.js'
import { runAccountCommand, type Terminal } from '../../src/cli/commands.js'
import { describe } from '../../src/cli/exit-codes.js'
import type { AdminOperations } from '../../src/cli/operations.js'
import { parseCommandLine, type AccountInvocation } from '../../src/cli/parse.js'
import { loadConfig } from '../../src/config/config.js'
import { PACKAGE_VERSION } from '../../src/config/version.js'
import { hashClientSecret } from '../../src/oidc/index.js'
import { migratedDatabaseUrl } from '../../support/postgres.js'
import { freshRedisPrefix, requireRedis } from '../../support/redis.js'

/*
 * `oidc clients add|list|remove`, run as main.ts runs them (parse, the command table, the error's
 * line and exit status), through both adapters on Postgres and Redis: in process, and through
 * a running service's admin API. Each case asserts what either must print; the two transcripts
 * are compared line for line at the end (ids, secrets and times masked). With the provider off,
 * both refuse alike.
 */

const KEY = 'oidc-cli-admin-key-0123456789-abcdefghijkl'
const ISSUER = 'https://auth.example.org/oidc'

interface Run { code: number, stdout: string, stderr: string }
type Adapter = 'in-process' | 'admin API'

interface Service {
  app: FastifyInstance
  run (args: string[]): Promise<Run>
}

async function serviceFor (t: Test, adapter: Adapter, providerOn = true): Promise<Service> {
  const config = loadConfig({
    DATABASE_URL: await migratedDatabaseUrl(t),
    REDIS_URL: await requireRedis(),
    AUTH_REDIS_KEY_PREFIX: await freshRedisPrefix(t),
    AUTH_ADMIN_KEY: KEY,
    AUTH_TOTP_KEY: Buffer.alloc(32, 7).toString('base64'),
    ...(providerOn ? { AUTH_OIDC_ISSUER: ISSUER } : {}),
    LOG_LEVEL: 'silent',
    NODE_ENV: 'test'
  })
  const app = await buildApp(config)
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => {
    await internal.close()
    await app.close()
  })
  let operations: (invocation: AccountInvocation) => AdminOperations
  if (adapter === 'admin API') {
    const api = createAdminApiOperations(createAdminClient({ url: await internal.listen({ host: '127.0.0.1', port: 0 }), key: KEY }))
    operations = () => api
  } else {
    operations = (invocation) => createInProcessOperations(config, invocation.command)
  }
  return {
    app,
    async run (args) {
      let stdout = ''
      let stderr = ''
      const terminal: Terminal = {
        out: (text) => { stdout += text },
        say: (text) => { stderr += `${text}\n` },
        readPassword: async () => undefined,
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
    }
  }
}

const lines = (text: string): string[] => text.split('\n').filter((line) => line !== '')
const CLIENT_ID = /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/
const SECRET = /^[A-Za-z0-9_-]{43}$/

async function clientCases (t: Test, service: Service, agent: string): Promise<string[]> {
  const transcript: string[] = []
  const ids: string[] = []
  const mask = (text: string): string => {
    let masked = text.replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z?/g, '<time>').replace(/\b[A-Za-z0-9_-]{43}\b/g, '<secret>')
    ids.forEach((id, i) => { masked = masked.replaceAll(id, `<client ${i}>`) })
    return masked
  }
  const run = async (args: string[]): Promise<Run> => {
    const result = await service.run(args)
    for (const id of result.stdout.match(/^[A-Za-z0-9_-]{22}$/gm) ?? []) if (!ids.includes(id)) ids.push(id)
    transcript.push(mask(`${args.join(' ')} -> ${result.code}\n${result.stdout}--\n${result.stderr}`))
    return result
  }

  let grafana = ''
  await t.test('add a confidential client: its id, then its secret alone on stdout\'s last line; only the hash kept', async (t) => {
    const added = await run(['oidc', 'clients', 'add', 'Grafana', '--redirect-uri', 'https://grafana.example.org/login/generic_oauth',
      '--redirect-uri', 'https://grafana.example.org/alt', '--post-logout-redirect-uri', 'https://grafana.example.org/login'])
    t.equal(added.code, 0, added.stderr)
    const [id, secret, ...rest] = lines(added.stdout)
    t.match(id, CLIENT_ID, 'the client id on the first line')
    t.match(secret, SECRET, 'the secret on the last')
    t.same(rest, [], 'nothing else on stdout')
    grafana = id ?? ''
    t.equal(added.stderr, `registered confidential client ${grafana} (Grafana); its secret is shown this once:\n`)
    const metadata = await service.app.oidcClients.metadataOf(grafana)
    t.equal(metadata?.client_secret, hashClientSecret(secret ?? ''), 'the service knows it by its hash')
    t.same(metadata?.redirect_uris, ['https://grafana.example.org/login/generic_oauth', 'https://grafana.example.org/alt'])
    t.same(metadata?.post_logout_redirect_uris, ['https://grafana.example.org/login'])
  })

  let cli = ''
  await t.test('add a public client: its id alone, no secret', async (t) => {
    const added = await run(['oidc', 'clients', 'add', 'kubectl', '--public', '--redirect-uri', 'http://127.0.0.1:8000/callback', '--backchannel-logout-uri', 'http://localhost:8001/bc'])
    t.equal(added.code, 0, added.stderr)
    t.equal(lines(added.stdout).length, 1, 'one line')
    cli = lines(added.stdout)[0] ?? ''
    t.match(cli, CLIENT_ID)
    t.equal(added.stderr, `registered public client ${cli} (kubectl): no secret, PKCE required\n`)
    t.match(await service.app.oidcClients.metadataOf(cli), { token_endpoint_auth_method: 'none', backchannel_logout_uri: 'http://localhost:8001/bc' })
  })

  await t.test('list: one client per line, never a secret', async (t) => {
    const list = await run(['oidc', 'clients', 'list'])
    t.same([list.code, list.stderr], [0, ''])
    const rows = lines(list.stdout).map((row) => row.split('\t'))
    t.same(rows.map((row) => [row[0], row[1], row[2], row[4]]), [
      [grafana, 'Grafana', 'confidential', 'https://grafana.example.org/login/generic_oauth https://grafana.example.org/alt'],
      [cli, 'kubectl', 'public', 'http://127.0.0.1:8000/callback']
    ])
    t.ok(rows.every((row) => row.length === 5 && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(row[3] ?? '')), 'id, name, kind, created, redirect URIs')
  })

  await t.test('refusals: a bad URL exits 1 with the rule; a missing --redirect-uri is a usage error', async (t) => {
    t.same(await run(['oidc', 'clients', 'add', 'x', '--redirect-uri', 'http://app.example.org/cb']), {
      code: 1,
      stdout: '',
      stderr: 'auth-token-service: redirect_uris must hold absolute URLs, https (http only for localhost, 127.0.0.1 or [::1]), without a fragment, at most 2048 characters\n'
    })
    t.same(await run(['oidc', 'clients', 'add', 'x', '--redirect-uri', 'https://app.example.org/cb', '--backchannel-logout-uri', 'https://app.example.org/bc#x']), {
      code: 1,
      stdout: '',
      stderr: 'auth-token-service: backchannel_logout_uri must be an absolute URL, https (http only for localhost, 127.0.0.1 or [::1]), without a fragment, at most 2048 characters\n'
    })
    const noUri = await run(['oidc', 'clients', 'add', 'x'])
    t.equal(noUri.code, 2)
    t.match(noUri.stderr, /^auth-token-service: oidc clients add wants --redirect-uri URL \(one or more\)\n/)
    t.equal((await run(['oidc', 'clients', 'add', 'x', '--redirect-uri', 'https://a.example/cb', '--service'])).code, 2, 'an option of another command')
    t.same(await run(['oidc', 'clients', 'remove', 'AAAAAAAAAAAAAAAAAAAAAA']), { code: 1, stdout: '', stderr: 'auth-token-service: no such client\n' })
    t.equal(lines((await run(['oidc', 'clients', 'list'])).stdout).length, 2, 'nothing was registered')
  })

  await t.test('remove: the client is gone for the service at once; a second removal is refused', async (t) => {
    t.same(await run(['oidc', 'clients', 'remove', grafana]), { code: 0, stdout: '', stderr: `client ${grafana} (Grafana) removed; every token it held has ended\n` })
    t.equal(await service.app.oidcClients.metadataOf(grafana), undefined, 'the provider finds it no longer')
    t.same(await run(['oidc', 'clients', 'remove', grafana]), { code: 1, stdout: '', stderr: 'auth-token-service: no such client\n' })
    t.same(lines((await run(['oidc', 'clients', 'list'])).stdout).map((row) => row.split('\t')[0]), [cli])
  })

  await t.test('audited with the command line\'s or the admin client\'s name', async (t) => {
    await service.app.backends.audit.flush()
    const events = await service.app.backends.audit.list({ since: new Date(Date.now() - 3_600_000) })
    const clientEvents = events.filter((event) => event.event.startsWith('oidc.')).map((event) => [event.event, event.outcome, event.userAgent])
    t.same(clientEvents, [
      ['oidc.client_created', `created:${grafana}`, agent],
      ['oidc.client_created', `created:${cli}`, agent],
      ['oidc.client_removed', `removed:${grafana}`, agent]
    ])
  })
  return transcript
}

t.test('both adapters register, list and remove clients alike', async (t) => {
  const transcripts: Partial<Record<Adapter, string[]>> = {}
  const adapters: Array<[Adapter, string]> = [['in-process', 'cli'], ['admin API', `auth-token-service-admin-client/${PACKAGE_VERSION}`]]
  for (const [adapter, agent] of adapters) {
    await t.test(`through the ${adapter} adapter`, async (t) => {
      transcripts[adapter] = await clientCases(t, await serviceFor(t, adapter), agent)
    })
  }
  const inProcess = transcripts['in-process'] ?? []
  t.ok(inProcess.length >= 10, `${inProcess.length} runs`)
  t.same(transcripts['admin API'], inProcess, 'the same exit statuses and output, run for run')
})

t.test('with the provider off, both adapters refuse every client command alike', async (t) => {
  for (const adapter of ['in-process', 'admin API'] as const) {
    const service = await serviceFor(t, adapter, false)
    const off = { code: 1, stdout: '', stderr: 'auth-token-service: the OpenID Connect provider is off (AUTH_OIDC_ISSUER is not set)\n' }
    t.same(await service.run(['oidc', 'clients', 'list']), off, `${adapter}: list`)
    t.same(await service.run(['oidc', 'clients', 'add', 'x', '--redirect-uri', 'https://a.example/cb']), off, `${adapter}: add`)
    t.same(await service.run(['oidc', 'clients', 'remove', 'AAAAAAAAAAAAAAAAAAAAAA']), off, `${adapter}: remove`)
    const { rows } = await service.app.backends.database.query('SELECT 1 FROM oidc_clients')
    t.equal(rows.length, 0, `${adapter}: nothing registered`)
  }
})
