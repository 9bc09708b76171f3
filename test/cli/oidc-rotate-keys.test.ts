import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { createAdminClient } from '../../src/admin/client.js'
import { buildApp } from '../../src/app/app.js'
import { buildInternalApp } from '../../src/app/internal-listener.js'
import { createAdminApiOperations } from '../../src/cli/adapters/admin-api.js'
import { createInProcessOperations } from '../../src/cli/adapters/in-process.js'
import { runAccountCommand, type Terminal } from '../../src/cli/commands.js'
import { describe } from '../../src/cli/exit-codes.js'
import { parseCommandLine, USAGE } from '../../src/cli/parse.js'
import { loadConfig, type Config } from '../../src/config/config.js'
import { watchSigningKeys, type SigningJwks } from '../../src/oidc/index.js'
import { migratedDatabaseUrl } from '../../support/postgres.js'
import { waitFor } from '../../support/processes.js'

/*
 * `oidc rotate-keys` as main.ts runs it, through either adapter: the admin API of a running
 * service (POST /admin/oidc/keys/rotate) or the database opened in this process. The new kids
 * on stdout, the retired ones on stderr; the running service signs with the new keys at once
 * (its own rotation) or at its next look (one made beside it).
 */

const KEY = 'oidc-rotate-admin-key-0123456789-abcdefgh'
const ISSUER = 'http://127.0.0.1:3000/oidc'

type Adapter = 'in-process' | 'admin API'

interface Run { code: number, stdout: string, stderr: string }

interface Service {
  app: FastifyInstance
  config: Config
  run (args: string[], config?: Config): Promise<Run>
  currentKids (): Promise<string[]>
}

async function serviceFor (t: Test, adapter: Adapter, env: Record<string, string> = {}): Promise<Service> {
  const sealing = randomBytes(32).toString('base64')
  const config = loadConfig({
    DATABASE_URL: await migratedDatabaseUrl(t),
    AUTH_ADMIN_KEY: KEY,
    AUTH_TOTP_KEY: sealing,
    AUTH_OIDC_ISSUER: ISSUER,
    LOG_LEVEL: 'silent',
    NODE_ENV: 'test',
    ...env
  })
  const app = await buildApp(config)
  await app.ready()
  const internal = await buildInternalApp(app, config)
  t.teardown(async () => {
    await internal.close()
    await app.close()
  })
  const url = adapter === 'admin API' ? await internal.listen({ host: '127.0.0.1', port: 0 }) : undefined
  return {
    app,
    config,
    async run (args, runConfig = config) {
      let stdout = ''
      let stderr = ''
      const terminal: Terminal = { out: (text) => { stdout += text }, say: (text) => { stderr += `${text}\n` }, readPassword: async () => undefined, isTTY: () => false }
      try {
        const invocation = parseCommandLine(args)
        if (invocation.command !== 'oidc rotate-keys') throw new Error(`not the command under test: ${args.join(' ')}`)
        const operations = url === undefined ? createInProcessOperations(runConfig, invocation.command) : createAdminApiOperations(createAdminClient({ url, key: KEY }))
        return { code: await runAccountCommand(operations, invocation, terminal), stdout, stderr }
      } catch (error) {
        const { message, code } = describe(error)
        return { code, stdout, stderr: `${stderr}auth-token-service: ${message}\n` }
      }
    },
    async currentKids () {
      const { rows } = await app.backends.database.query<{ kid: string }>("SELECT kid FROM oidc_signing_keys WHERE retired_at IS NULL ORDER BY alg = 'RS256' DESC")
      return rows.map((row) => row.kid)
    }
  }
}

const KID_LINE = /^([A-Za-z0-9_-]{43})\t(RS256|ES256)$/
const lines = (text: string): string[] => text.split('\n').filter((line) => line !== '')

for (const adapter of ['admin API', 'in-process'] as const) {
  t.test(`through the ${adapter} adapter`, async (t) => {
    const service = await serviceFor(t, adapter)
    const signingKeys = service.app.signingKeys
    if (signingKeys === undefined) throw new Error('the provider is on: its signing keys are there')
    const changes: SigningJwks[] = []
    const watch = await watchSigningKeys(signingKeys, { everyMs: 3_600_000, onChange: (jwks) => { changes.push(jwks) }, onError: (error) => { t.fail(String(error)) } })
    t.teardown(() => { watch.stop() })
    const first = await service.currentKids()
    t.equal(first.length, 2, 'the service\'s first load made its first pair')

    const rotated = await service.run(['oidc', 'rotate-keys'])
    t.equal(rotated.code, 0, rotated.stderr)
    const made = lines(rotated.stdout).map((line) => KID_LINE.exec(line))
    t.same(made.map((match) => match?.[2]), ['RS256', 'ES256'], 'the new kids on stdout, one a line, RS256 first')
    const newKids = made.map((match) => match?.[1])
    t.same(await service.currentKids(), newKids, 'they are the current keys')
    const retired = lines(rotated.stderr)
    t.equal(retired.length, 2, 'one line per retired key on stderr')
    retired.forEach((line, i) => {
      t.match(line, new RegExp(`^retired ${first[i] ?? ''} \\((RS256|ES256)\\): in the JWKS until \\d{4}-\\d{2}-\\d{2}T[\\d:.]+Z$`), `the old ${i === 0 ? 'RS256' : 'ES256'} key, and until when`)
    })
    const keptUntil = Date.parse(retired[0]?.split('until ')[1] ?? '')
    t.ok(keptUntil - Date.now() >= (service.config.oidc?.idTokenTtlSeconds ?? Infinity) * 1000 - 5000, 'kept at least the ID token\'s life')

    // The running service: its own rotation (the admin API's) at once; one made beside it at its next look.
    if (adapter === 'in-process') {
      t.equal(changes.length, 0, 'not seen before the service looks')
      await watch.refresh()
    } else {
      // No timed look for an hour: only the rotation itself can have told the service.
      await waitFor('the service to load the new keys', () => changes.length > 0, { timeoutMs: 10_000, everyMs: 10 })
      await watch.refresh()
      t.equal(changes.length, 1, 'seen at once, and only once')
    }
    t.same(changes.at(-1)?.keys.map((key) => key.kid), [...newKids, ...first], 'the service\'s JWKS: the new keys first, the old ones kept')
  })

  t.test(`through the ${adapter} adapter, with the provider off: exit 1, saying so`, async (t) => {
    const service = await serviceFor(t, adapter, { AUTH_OIDC_ISSUER: '' })
    t.equal(service.app.signingKeys, undefined)
    t.same(await service.run(['oidc', 'rotate-keys']), { code: 1, stdout: '', stderr: 'auth-token-service: the OpenID Connect provider is off (AUTH_OIDC_ISSUER is not set)\n' })
  })
}

t.test('in process with another sealing key than the service\'s: a warning for each key that did not open', async (t) => {
  const service = await serviceFor(t, 'in-process')
  await service.app.signingKeys?.ensure()
  const [rsa] = await service.currentKids()
  const otherKey = loadConfig({
    DATABASE_URL: service.config.databaseUrl ?? '',
    AUTH_TOTP_KEY: randomBytes(32).toString('base64'),
    AUTH_OIDC_ISSUER: ISSUER,
    LOG_LEVEL: 'silent',
    NODE_ENV: 'test'
  })
  const rotated = await service.run(['oidc', 'rotate-keys'], otherKey)
  t.equal(rotated.code, 0)
  t.match(lines(rotated.stderr)[0], new RegExp(`^warning: retired ${rsa ?? ''} \\(RS256\\) does not open with the sealing key the new keys were sealed with: run the command with the service's AUTH_TOTP_KEY`))
  t.equal(lines(rotated.stdout).length, 2, 'the new kids still printed')
})

t.test('usage: oidc rotate-keys takes nothing; an unknown oidc command is a usage error', async (t) => {
  t.same(parseCommandLine(['oidc', 'rotate-keys']), { command: 'oidc rotate-keys' })
  t.throws(() => parseCommandLine(['oidc', 'rotate-keys', 'now']), /oidc rotate-keys takes no arguments/)
  t.throws(() => parseCommandLine(['oidc']), /unknown oidc command: \(none\)/)
  t.throws(() => parseCommandLine(['oidc', 'rotate']), /unknown oidc command: rotate/)
  t.match(USAGE, /\n {2}oidc rotate-keys {2,}new signing keys/, 'in the usage text')
})
