import { spawn } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { cliCommand, type ServiceProcess } from '../../support/service.js'

/**
 * The command line and the service on one embedded (PGlite) data directory, as real
 * processes: what test/cli-embedded-*.test.ts share.
 */

export const ADMIN = Object.freeze({ username: 'admin', password: 'first & only operator' })
export const ALICE = Object.freeze({ first: 'her first secret', second: 'her second secret' })

export interface Run { args: string[], code: number | null, stdout: string, stderr: string }

/** Runs the built CLI with exactly `env` (and PATH); `stdin` is written and closed. */
export async function cli (env: Record<string, string>, args: string[], stdin = ''): Promise<Run> {
  return await new Promise((resolve, reject) => {
    const child = spawn(...cliCommand(args), { env: { PATH: process.env.PATH, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    const timer = setTimeout(() => { child.kill('SIGKILL') }, 120_000)
    child.once('error', reject)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ args, code, stdout, stderr })
    })
    // A command refused before it reads stdin must not fail the test with EPIPE.
    child.stdin.on('error', () => {})
    child.stdin.end(stdin)
  })
}

export async function login (service: ServiceProcess, username: string, password: string): Promise<{ status: number, token?: string }> {
  const response = await fetch(`${service.baseUrl}/auth/Login`, { method: 'POST', body: new URLSearchParams({ username, password }) })
  return await response.json() as { status: number, token?: string }
}

export async function authenticate (service: ServiceProcess, token: string | undefined): Promise<number> {
  const response = await fetch(`${service.baseUrl}/auth/Authenticate?token=${encodeURIComponent(token ?? '')}`)
  await response.arrayBuffer()
  return response.status
}

/** The lock's own files in the data directory. */
export async function lockFiles (dataDir: string): Promise<string[]> {
  return (await readdir(dataDir)).filter((name) => name.startsWith('auth-token-service.')).sort()
}

/** What a serving process keeps there (a dead one leaves them): the lock, its record, and the admin access of the local CLI. */
export const LOCK_FILES = ['auth-token-service.admin.json', 'auth-token-service.lock', 'auth-token-service.owner.json']

/** Non-empty lines of stdout. */
export function rows (run: Run): string[] {
  return run.stdout.split('\n').filter((line) => line !== '')
}

/** The audit events of account administration (logins left out), as [event, username]. */
export function adminEvents (run: Run): string[][] {
  return rows(run).map((line) => line.split('\t').slice(1, 3)).filter(([event]) => /^(user|sessions)\./.test(event ?? ''))
}
