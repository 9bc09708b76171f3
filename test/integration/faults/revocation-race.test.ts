import { spawn } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { HttpDriver, issuedToken, verdictOf, type Outcome } from '../../../support/load.js'
import { cliCommand, runCli, serviceEnv, startService, type ServiceProcess } from '../../../support/service.js'
import { startThrowawayPostgres } from '../../../support/postgres.js'
import { startThrowawayRedis } from '../../../support/redis.js'
import { ACCOUNT } from '../../support/checks.js'

/*
 * A Login that a revocation overtakes, raced on a real service: Logins of alice sent in waves
 * (4 every 40 ms) while `user disable alice` or `user passwd alice` runs as the operator runs it
 * (the built CLI in a process of its own). When the command has returned, every token that a
 * Login started before that moment obtained must be refused: none may authenticate.
 *
 * The service hashes on one thread, so the waves (100 Logins a second) outrun it and a queue
 * of Logins builds up, each with its credentials checked before the revocation and its
 * token written after it: the window the race needs, wide open on purpose.
 */

// Passwords without the username in them: the password policy refuses those.
const ALICE = { username: 'alice', password: 'her old secret', changed: 'her new secret' }
const ROUNDS = 3
const WAVE = 4
const WAVE_EVERY_MS = 40
// Enough for a queue many hashes deep when the command runs; without a cap, `user passwd` (whose
// own hash waits behind the queue on the one thread) ran ever longer rounds: 232, 384, 504 Logins
// and 144 s for the three, where the race needs only the queue that is there when it starts.
const MAX_LOGINS_PER_ROUND = 160

let service: ServiceProcess
let env: Record<string, string>

t.before(async () => {
  const postgres = await startThrowawayPostgres(t)
  const redis = await startThrowawayRedis(t, { aof: false })
  env = serviceEnv({ redisUrl: redis.url, databaseUrl: postgres.url }, ACCOUNT, {
    AUTH_HASH_CONCURRENCY: '1',
    AUTH_HASH_QUEUE_MAX: '5000',
    // All from one account and one address, on purpose: its fair share of the queue must not refuse them.
    AUTH_HASH_ACCOUNT_QUEUED: '5000',
    AUTH_HASH_IP_QUEUED: '5000',
    AUTH_MAX_FAILED_LOGINS: '100',
    AUTH_LOCKOUT_SECONDS: '1',
    AUTH_MAX_LOCKOUT_SECONDS: '1',
    AUTH_MAX_FAILED_LOGINS_PER_IP: '1000000',
    AUTH_REDIS_COMMAND_TIMEOUT_MS: '2000'
  })
  service = await startService(t, env)
  await runCli(['user', 'add', ALICE.username], env, `${ALICE.password}\n`)
})

interface Round {
  /** Every Login sent, with the time it was sent. */
  logins: Outcome[]
  /** performance.now() when the revoking command had exited. */
  returnedAt: number
  stderr: string
  code: number | null
}

/** The CLI as a child process; resolves when it has exited. */
async function command (args: string[], input: string): Promise<{ code: number | null, stderr: string, returnedAt: number }> {
  return await new Promise((resolve) => {
    const child = spawn(...cliCommand(args), { env: { PATH: process.env.PATH, ...env }, stdio: ['pipe', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    child.once('exit', (code) => { resolve({ code, stderr, returnedAt: performance.now() }) })
    child.stdin.end(input)
  })
}

/** Waves of Logins with `password` from before the command starts until it has returned. */
async function raceAgainst (args: string[], input: string, password: string): Promise<Round> {
  const driver = new HttpDriver(service.baseUrl, { maxSockets: 256, timeoutMs: 60_000 })
  const pending: Array<Promise<Outcome>> = []
  let running = true
  const waves = (async () => {
    while (running) {
      for (let i = 0; i < WAVE && pending.length < MAX_LOGINS_PER_ROUND; i++) pending.push(driver.login(ALICE.username, password, undefined, 60_000))
      await sleep(WAVE_EVERY_MS)
    }
  })()
  // Let a queue of Logins build up first.
  await sleep(400)
  const { code, stderr, returnedAt } = await command(args, input)
  running = false
  await waves
  const logins = await Promise.all(pending)
  driver.close()
  return { logins, returnedAt, stderr, code }
}

/** Tokens from Logins started before the command returned that still authenticate. */
async function survivors (round: Round): Promise<{ issued: number, survived: number }> {
  const driver = new HttpDriver(service.baseUrl, { maxSockets: 16 })
  const before = round.logins.filter((login) => login.startedAt < round.returnedAt)
  const tokens = before.map(issuedToken).filter((token): token is string => token !== undefined)
  const answers = await Promise.all(tokens.map(async (token) => await driver.authenticate(token)))
  driver.close()
  return {
    issued: tokens.length,
    survived: answers.filter((answer) => verdictOf(answer) === 'success').length
  }
}

t.test('a Login in flight never outlives `user disable`', async (t) => {
  let total = 0
  for (let round = 1; round <= ROUNDS; round++) {
    await runCli(['user', 'enable', ALICE.username], env)
    await sleep(1100)
    const result = await raceAgainst(['user', 'disable', ALICE.username], '', ALICE.password)
    t.equal(result.code, 0, `user disable exited 0: ${result.stderr.trim()}`)
    const { issued, survived } = await survivors(result)
    t.comment(`round ${round}: ${result.logins.length} Logins, ${issued} tokens issued, ${survived} still authenticate after \`user disable\` returned`)
    total += survived
  }
  t.equal(total, 0, `no token of a Login started before the disable authenticates (${total} did)`)
})

t.test('a Login in flight with the old password never outlives `user passwd`', async (t) => {
  await runCli(['user', 'enable', ALICE.username], env)
  let total = 0
  for (let round = 1; round <= ROUNDS; round++) {
    await sleep(1100)
    const result = await raceAgainst(['user', 'passwd', ALICE.username], `${ALICE.changed}\n`, ALICE.password)
    t.equal(result.code, 0, `user passwd exited 0: ${result.stderr.trim()}`)
    const { issued, survived } = await survivors(result)
    t.comment(`round ${round}: ${result.logins.length} Logins, ${issued} tokens issued with the old password, ${survived} still authenticate after \`user passwd\` returned`)
    total += survived
    // The old password back for the next round (this ends the account's tokens too).
    await runCli(['user', 'passwd', ALICE.username], env, `${ALICE.password}\n`)
  }
  t.equal(total, 0, `no token obtained with the old password authenticates (${total} did)`)
})
