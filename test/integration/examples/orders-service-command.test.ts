import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { freePort } from '../../../support/processes.js'
import { eventually, startTokenService, USER, type GuardMode, type RunningService } from '../../guard/support.js'

/*
 * The command docs/guard.md gives, as a user types it: `npm run example` from the project root,
 * against a running token service, over HTTP (AUTH_SERVICE_URL) and straight on the
 * service's Redis (REDIS_URL, AUTH_REDIS_KEY_PREFIX); then the curls docs/guard.md shows.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

interface Example {
  baseUrl: string
  output: () => string
}

async function runExample (t: Test, env: Record<string, string>): Promise<Example> {
  const port = await freePort()
  // Its own process group: npm, the shell it starts and node are stopped together.
  const child = spawn('npm', ['run', 'example'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? ROOT, ORDERS_PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve() }))
  t.teardown(async () => {
    if (child.pid === undefined) return
    try { process.kill(-child.pid, 'SIGTERM') } catch {}
    const timer = setTimeout(() => { try { process.kill(-(child.pid ?? 0), 'SIGKILL') } catch {} }, 10_000)
    await exited
    clearTimeout(timer)
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  try {
    await eventually(() => {
      if (child.exitCode !== null) throw new Error(`it exited with ${child.exitCode}`)
      return output.includes('try: curl')
    }, 60_000, 'the start-up lines')
  } catch (error) {
    throw new Error(`npm run example did not start (${(error as Error).message}):\n${output}`)
  }
  return { baseUrl: `http://127.0.0.1:${port}`, output: () => output }
}

const MODE_ENV: Record<GuardMode, (service: RunningService) => Record<string, string>> = {
  http: (service) => ({ AUTH_SERVICE_URL: service.baseUrl }),
  direct: (service) => ({ REDIS_URL: service.redisUrl, AUTH_REDIS_KEY_PREFIX: service.keyPrefix })
}

for (const mode of ['http', 'direct'] as const) {
  t.test(`npm run example, ${mode} mode, against a running service`, async (t) => {
    const service = await startTokenService(t)
    const example = await runExample(t, MODE_ENV[mode](service))
    t.match(example.output(), `orders-service on ${example.baseUrl} verifies tokens ${mode === 'http' ? `over HTTP with ${service.baseUrl}/auth/Authenticate` : "straight on the service's Redis"}`,
      'says where it listens and how it verifies')
    t.match(example.output(), `curl -s -H "Authorization: Bearer $TOKEN" ${example.baseUrl}/orders`, 'and what to curl')

    const anonymous = await fetch(`${example.baseUrl}/orders`)
    t.equal(anonymous.status, 401, 'no token: 401')
    const login = await service.client.login(USER.username, USER.password)
    if (!login.ok) throw new Error(`login failed: ${JSON.stringify(login.error)}`)
    const bearer = { authorization: `Bearer ${login.token}` }
    const created = await fetch(`${example.baseUrl}/orders`, { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ item: 'paper', quantity: 3 }) })
    t.equal(created.status, 201)
    const listed = await fetch(`${example.baseUrl}/orders`, { headers: bearer })
    t.equal(listed.status, 200)
    t.match(await listed.json(), { account: { username: USER.username }, orders: [{ item: 'paper', quantity: 3 }] }, "the caller's orders")

    t.ok((await service.client.logout(login.token)).ok, 'logged out through the service')
    await eventually(async () => (await fetch(`${example.baseUrl}/orders`, { headers: bearer })).status === 403, 2000, 'refused after Logout')
    t.notMatch(example.output(), login.token, 'the token is not logged')
  })
}
