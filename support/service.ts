import { spawn } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, type Scope, spawnTracked, stopChild, waitFor } from './processes.js'

/** The built service as a real process: its command line (runCli) and `serve` (startService). */

/** The built CLI to run: this checkout's dist/, or ATS_SERVICE_CLI (another build of the same package). */
export const CLI = process.env.ATS_SERVICE_CLI ?? fileURLToPath(new URL('../dist/cli/main.js', import.meta.url))

/**
 * How to start the built CLI with `args` (and Node's own `nodeArgs` before it): the file and
 * arguments for spawn or execFile. Under tap every child Node gets tap's process-info hook in
 * its NODE_OPTIONS, whatever env it is given: the hook records each module the child loads, for
 * coverage, and made each start of the built CLI or service cost 0.7 CPU-s more on Node 20
 * (importing dist/app.js: 1.35 CPU-s with it, 0.64 without). dist/ is outside coverage, so the
 * built CLI starts through `env -u NODE_OPTIONS`, which execs Node in the same process (the
 * child's pid, signals and exit status are Node's). The envs given here never hold a
 * NODE_OPTIONS of their own. Throws, saying to build, when there is no built CLI.
 */
export function cliCommand (args: readonly string[], nodeArgs: readonly string[] = []): [string, string[]] {
  requireBuild()
  return ['env', ['-u', 'NODE_OPTIONS', process.execPath, ...nodeArgs, CLI, ...args]]
}

function requireBuild (): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` (npm test does it first)`)
}

function newestSource (dir: string): { path: string, mtimeMs: number } {
  let newest = { path: dir, mtimeMs: 0 }
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    const candidate = entry.isDirectory() ? newestSource(path) : { path, mtimeMs: statSync(path).mtimeMs }
    if (candidate.mtimeMs > newest.mtimeMs) newest = candidate
  }
  return newest
}

/**
 * The built CLI, built after the last change to src/: `npm test` builds first (pretest), and a
 * file run alone must not test a stale build. Returns its path.
 */
export function requireCurrentBuild (): string {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (\`npm test\` does it through pretest)`)
  const source = newestSource(fileURLToPath(new URL('../src/', import.meta.url)))
  // The build is incremental: a file it did not need to change keeps its old time. `npm run build`
  // touches its info file every time, so that file says when the last build ran.
  const stamp = fileURLToPath(new URL('../dist/.tsbuildinfo', import.meta.url))
  const built = Math.max(statSync(CLI).mtimeMs, existsSync(stamp) ? statSync(stamp).mtimeMs : 0)
  if (source.mtimeMs > built) {
    throw new Error(`${CLI} is older than ${source.path}: run \`npm run build\` first (\`npm test\` does it through pretest)`)
  }
  return CLI
}

/** Runs one command of the built CLI; rejects with its stderr when it fails. */
export async function runCli (args: string[], env: Record<string, string>, input?: string): Promise<string> {
  return await new Promise<string>((resolve, reject) => {
    const child = spawn(...cliCommand(args), {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['pipe', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    const timer = setTimeout(() => { child.kill('SIGKILL') }, 60_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      if (code === 0) resolve(stdout)
      else reject(new Error(`auth-token-service ${args.join(' ')} exited with ${String(code)}: ${stderr}`))
    })
    child.stdin.end(input ?? '')
  })
}

export interface ExitStatus { code: number | null, signal: NodeJS.Signals | null }

export interface ServiceProcess {
  readonly port: number
  readonly baseUrl: string
  readonly pid: number
  /** Everything it wrote to stdout and stderr so far. */
  output (): string
  /**
   * The output once it matches `pattern` (or, after `timeoutMs`, as it stands, for the test's
   * own match to show): readiness answers before the log lines written at start have all come
   * through the pipe (the logger writes asynchronously), so a start-up line is waited for.
   */
  outputMatching (pattern: RegExp, timeoutMs?: number): Promise<string>
  /** Null while it runs. */
  exitStatus (): ExitStatus | null
  /** Resolves when the process has exited and its output has ended. */
  readonly exited: Promise<ExitStatus>
  /** Sends `signal` (default SIGTERM) and returns at once: whether it was sent. */
  kill (signal?: NodeJS.Signals): boolean
  /** Sends `signal` and resolves with how it ended (SIGKILL after `graceMs`). */
  stop (signal?: NodeJS.Signals, graceMs?: number): Promise<ExitStatus>
}

export interface ServiceStartOptions {
  /** Listen here (a restart on the same port); default a free one. */
  port?: number
  /** Wait until /health/ready answers 200 (default), or only until /health/live does. */
  waitReady?: boolean
  /** Its working directory (where the embedded default keeps ./data); default this process's. */
  cwd?: string
  /** Node's own options before the script (`--import x.mjs`); default none. */
  nodeArgs?: readonly string[]
}

/**
 * Starts `node dist/cli/main.js serve` with exactly `env` (plus PATH, HOST and PORT) and
 * resolves once it answers; its readiness is polled over HTTP, whatever LOG_LEVEL says.
 */
export async function startService (scope: Scope, env: Record<string, string>, options: ServiceStartOptions = {}): Promise<ServiceProcess> {
  // A free port taken by another process before the service listened on it (beside the Cluster
  // step's nodes and their bus ports, +10000): again on another, when the port was ours to choose.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServiceOnce(scope, env, options)
    } catch (error) {
      if (!(error instanceof AddressInUse) || options.port !== undefined || attempt === 3) throw error
    }
  }
}

class AddressInUse extends Error {}

async function startServiceOnce (scope: Scope, env: Record<string, string>, options: ServiceStartOptions): Promise<ServiceProcess> {
  const port = options.port ?? await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const child = spawnTracked(...cliCommand(['serve'], options.nodeArgs), {
    cwd: options.cwd,
    // INTERNAL_PORT 0: the internal listener on a free port, so services started side by side do not collide on 3001.
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), INTERNAL_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  // The last 64 MB, cut at a line boundary (every 503 is logged with its cause). Tests that
  // look for every request's access line (shutdown) write several MB in a few seconds: a 2 MB
  // bound, as the fault tests' own helper had before the two were made one, cut their first lines.
  const keep = (chunk: Buffer): void => {
    output += chunk.toString()
    if (output.length > 64_000_000) output = output.slice(output.indexOf('\n', output.length - 48_000_000) + 1)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  let status: ExitStatus | null = null
  child.once('exit', (code, signal) => { status = { code, signal } })
  // Resolved on 'close', after 'exit': then its stdout and stderr have ended, so that the output
  // read after it holds the last lines (a shutdown's "closed"), which 'exit' can come before.
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once('close', (code, signal) => { resolve(status ?? { code, signal }) })
  })
  scope.teardown(async () => { await stopChild(child, 'SIGKILL') })
  const path = options.waitReady === false ? '/health/live' : '/health/ready'
  try {
    await waitFor(`the service on :${port}`, async () => {
      if (status !== null) throw new Error(`exited with ${String(status.code ?? status.signal)}`)
      try {
        const response = await fetch(baseUrl + path, { signal: AbortSignal.timeout(2000) })
        await response.arrayBuffer()
        return response.status === 200
      } catch {
        // Not listening yet.
        return false
      }
    }, { timeoutMs: 60_000 })
  } catch (error) {
    await stopChild(child, 'SIGKILL')
    const message = `the service did not come up on :${port} (${String(error)}):\n${output}`
    throw output.includes('EADDRINUSE') ? new AddressInUse(message) : new Error(message)
  }
  return {
    port,
    baseUrl,
    pid: child.pid ?? -1,
    output: () => output,
    async outputMatching (pattern, timeoutMs = 10_000) {
      await waitFor(`${String(pattern)} in the output`, () => pattern.test(output) || status !== null, { timeoutMs, everyMs: 20 }).catch(() => 0)
      return output
    },
    exitStatus: () => status,
    exited,
    kill: (signal = 'SIGTERM') => child.kill(signal),
    async stop (signal = 'SIGTERM', graceMs = 30_000) {
      await stopChild(child, signal, graceMs)
      return await exited
    }
  }
}

/** The environment every fault test gives the service: fail fast, quiet logs, one bootstrap account. */
export function serviceEnv (backends: { redisUrl: string, databaseUrl: string }, account: { username: string, password: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: backends.databaseUrl,
    REDIS_URL: backends.redisUrl,
    LOG_LEVEL: 'warn',
    AUTH_BOOTSTRAP_USERNAME: account.username,
    AUTH_BOOTSTRAP_PASSWORD: account.password,
    AUTH_REDIS_COMMAND_TIMEOUT_MS: '300',
    ...extra
  }
}
