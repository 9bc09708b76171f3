import t, { type Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { link, mkdir, readFile, readdir, rename, utimes, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import {
  assertDataDirFree, DataDirBusyError, DataDirLockError, findDataDirOwner, lockDataDir,
  LOCK_SOCKET_NAME, OWNER_FILE_NAME, reapDeadSocket, type DataDirLock
} from '../../src/db/data-dir-lock.js'
import { tempDir } from '../../support/processes.js'

/*
 * The lock on the embedded database's directory: one owner at a time, named to whoever
 * is refused; a dead owner (SIGKILL) never blocks; a live owner whose event loop is
 * stuck is never robbed. Other processes are real ones, taking the lock through the
 * built module (dist/), as the service and the command line do.
 */

const LOCK_MODULE = fileURLToPath(new URL('../../dist/db/data-dir-lock.js', import.meta.url))
if (!existsSync(LOCK_MODULE)) throw new Error(`${LOCK_MODULE} is missing: run \`npm run build\` first (\`npm test\` does it through pretest)`)

async function refusal (attempt: Promise<unknown>): Promise<unknown> {
  try {
    await attempt
  } catch (error) {
    return error
  }
  return undefined
}

interface Holder {
  child: ChildProcess
  /** Resolves with how it ended. */
  exited: Promise<NodeJS.Signals | number | null>
}

/**
 * Another process that takes the lock as `command`, says `locked` and waits; with
 * `blockMs` it then blocks its event loop that long (a WASM checkpoint does the same).
 */
async function holdInAnotherProcess (t: Test, dataDir: string, command: string, options: { blockMs?: number, cwd?: string } = {}): Promise<Holder> {
  const script = `
    const { lockDataDir } = await import(${JSON.stringify(LOCK_MODULE)})
    const lock = await lockDataDir(${JSON.stringify(dataDir)}, ${JSON.stringify(command)})
    await lock.announce({ url: 'http://127.0.0.1:1' })
    process.stdout.write('locked\\n')
    const until = Date.now() + ${options.blockMs ?? 0}
    while (Date.now() < until) {}
    process.stdout.write('unblocked\\n')
    setInterval(() => {}, 1000)
  `
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'], cwd: options.cwd })
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => { resolve(signal ?? code) }))
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let output = ''
  let errors = ''
  child.stderr.on('data', (chunk: Buffer) => { errors += chunk.toString() })
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes('locked\n')) resolve()
    })
    exited.then((how) => { reject(new Error(`the holder ended (${String(how)}) before it locked: ${errors}`)) })
  })
  return { child, exited }
}

t.test('one owner at a time; the refused one is told who has it', async (t) => {
  const dir = await tempDir(t, 'ats-lock-')
  const lock = await lockDataDir(dir, 'serve')
  t.teardown(async () => { await lock.release() })
  t.ok(statSync(join(dir, LOCK_SOCKET_NAME)).isSocket(), 'the lock is a socket in the directory')

  const error = await refusal(lockDataDir(dir, 'user add'))
  t.ok(error instanceof DataDirBusyError, 'a second owner is refused')
  t.match((error as DataDirBusyError).holder, { pid: process.pid, command: 'serve', url: null })
  t.equal((error as Error).message,
    `the embedded database in ${dir} is in use by the running service (pid ${process.pid}, starting): ` +
    'stop it first, then run this command again (account and session commands go through its admin API: docs/administration.md)')

  await lock.announce({ url: 'http://127.0.0.1:3000' })
  const asServe = await refusal(lockDataDir(dir, 'serve'))
  t.match((asServe as Error).message, `in use by the running service (pid ${process.pid}, listening on http://127.0.0.1:3000): stop it first, or give this one another AUTH_DATA_DIR`,
    'a second service is told where the first listens')
  t.match(await refusal(assertDataDirFree(dir, 'user passwd')), DataDirBusyError, 'the check before a password prompt refuses too')
})

t.test('the record: in the socket and in a file, for a later command to find the service', async (t) => {
  const dir = await tempDir(t, 'ats-lock-')
  t.equal(await findDataDirOwner(dir), undefined, 'nobody owns a fresh directory')
  const lock = await lockDataDir(dir, 'serve')
  await lock.announce({ url: 'http://127.0.0.1:3000' })
  const expected = {
    service: 'auth-token-service',
    pid: process.pid,
    hostname: hostname(),
    command: 'serve',
    startedAt: lock.owner.startedAt,
    dataDir: dir,
    url: 'http://127.0.0.1:3000',
    internalUrl: null
  }
  t.same(await findDataDirOwner(dir), expected, 'the owner answers on the socket')
  t.same(JSON.parse(await readFile(join(dir, OWNER_FILE_NAME), 'utf8')), expected, 'and the file says the same')
  t.ok(Math.abs(Date.parse(expected.startedAt) - Date.now()) < 60_000, 'startedAt is an ISO date of now')

  await lock.release()
  t.same(await readdir(dir), [], 'released: the socket and the file are gone')
  t.equal(await findDataDirOwner(dir), undefined)
  const again = await lockDataDir(dir, 'migrate')
  t.equal(again.owner.command, 'migrate', 'and the directory can be taken again')
  await again.release()
})

t.test('a SIGKILLed owner does not block, whatever pid its record names', async (t) => {
  const dir = await tempDir(t, 'ats-lock-')
  const holder = await holdInAnotherProcess(t, dir, 'serve')
  t.match((await refusal(lockDataDir(dir, 'user list')) as Error).message, `pid ${holder.child.pid ?? -1}, listening on http://127.0.0.1:1`)

  holder.child.kill('SIGKILL')
  t.equal(await holder.exited, 'SIGKILL')
  t.ok(statSync(join(dir, LOCK_SOCKET_NAME)).isSocket(), 'the dead owner left its socket behind')
  // A pid file would now see pid 1 (always alive, and in a container the service itself): the socket is what counts.
  const record = JSON.parse(await readFile(join(dir, OWNER_FILE_NAME), 'utf8')) as Record<string, unknown>
  await writeFile(join(dir, OWNER_FILE_NAME), JSON.stringify({ ...record, pid: 1 }))

  t.equal(await findDataDirOwner(dir), undefined, 'nobody owns it')
  const lock = await lockDataDir(dir, 'user list')
  t.equal(lock.owner.pid, process.pid, 'taken over')
  t.same(JSON.parse(await readFile(join(dir, OWNER_FILE_NAME), 'utf8')), lock.owner, 'with a record of its own')
  await lock.release()
})

/** What a SIGKILLed owner leaves, made in-process: a socket file nobody listens on. */
async function leaveDeadSocket (dir: string): Promise<void> {
  const path = join(dir, LOCK_SOCKET_NAME)
  const server = createServer()
  await new Promise<void>((resolve) => { server.listen(path, resolve) })
  // Closing removes the path; a second name keeps the socket file, which then refuses connections.
  await link(path, `${path}.kept`)
  await new Promise((resolve) => { server.close(resolve) })
  await rename(`${path}.kept`, path)
}

t.test('many takers of a dead owner\'s lock: exactly one wins', async (t) => {
  const dir = await tempDir(t, 'ats-lock-')
  await leaveDeadSocket(dir)
  for (let round = 0; round < 8; round++) {
    // Staggered starts: some takers find the socket dead while another has just taken it.
    const attempts = await Promise.allSettled(Array.from({ length: 8 }, async (_, i) => {
      await sleep(i * (round % 4) / 4)
      return await lockDataDir(dir, `taker ${i}`)
    }))
    const won = attempts.filter((a): a is PromiseFulfilledResult<DataDirLock> => a.status === 'fulfilled')
    const lost = attempts.filter((a): a is PromiseRejectedResult => a.status === 'rejected')
    t.equal(won.length, 1, `round ${round}: one taker won`)
    t.ok(lost.every((a) => a.reason instanceof DataDirBusyError), `round ${round}: the others were told it is in use`)
    await won[0]?.value.release()
    await leaveDeadSocket(dir)
  }
  t.same((await readdir(dir)).filter((name) => name.includes('reap')), [], 'no reap claim left behind')
})

t.test('a taker that saw a dead socket never removes the live one that replaced it', async (t) => {
  // The race: two takers see the dead socket; one removes it and binds its own; the other,
  // acting on what it saw, must not remove that one. The reaper checks again under its claim.
  const dir = await tempDir(t, 'ats-lock-')
  const address = join(dir, LOCK_SOCKET_NAME)
  const lock = await lockDataDir(dir, 'serve')
  t.teardown(async () => { await lock.release() })
  await reapDeadSocket(dir, address)
  t.ok(statSync(address).isSocket(), 'the live socket is still there')
  t.match(await findDataDirOwner(dir), { pid: process.pid, command: 'serve' }, 'and still answers')

  // A claim left by a taker that died in its few milliseconds: backed off from while young, removed when old.
  await mkdir(join(dir, 'auth-token-service.reap'))
  await lock.release()
  await leaveDeadSocket(dir)
  await reapDeadSocket(dir, address)
  t.ok(existsSync(address), 'a young claim: the reaper backs off')
  const old = new Date(Date.now() - 60_000)
  await utimes(join(dir, 'auth-token-service.reap'), old, old)
  const taken = await lockDataDir(dir, 'user list')
  t.equal(taken.owner.command, 'user list', 'an old claim does not block for ever')
  await taken.release()
})

t.test('a live owner whose event loop is stuck keeps the directory', async (t) => {
  const dir = await tempDir(t, 'ats-lock-')
  const holder = await holdInAnotherProcess(t, dir, 'serve', { blockMs: 20_000 })
  const started = Date.now()
  const error = await refusal(lockDataDir(dir, 'user add'))
  t.ok(error instanceof DataDirBusyError, 'refused: the kernel accepted the connection, so the owner lives')
  t.match((error as DataDirBusyError).holder, { pid: holder.child.pid, command: 'serve' }, 'named from the file it wrote')
  t.ok(Date.now() - started < 15_000, 'refused without waiting for the owner (blocked 20 s)')
  holder.child.kill('SIGKILL')
  await holder.exited
})

t.test('a data directory too deep for a socket: relative to the working directory, or one clear error', async (t) => {
  const dir = await tempDir(t, 'ats-lock-')
  const deep = join(dir, 'd'.repeat(60), 'e'.repeat(60))
  await mkdir(deep, { recursive: true })
  const error = await refusal(lockDataDir(deep, 'serve'))
  t.ok(error instanceof DataDirLockError)
  t.match((error as Error).message, /too deep for its lock socket .*AUTH_DATA_DIR/)
  t.notMatch((error as Error).message, /\n/, 'one line')

  // From a working directory next to it, the relative path fits; another process there sees the owner.
  const holder = await holdInAnotherProcess(t, deep, 'serve', { cwd: join(dir, 'd'.repeat(60)) })
  t.ok(statSync(join(deep, LOCK_SOCKET_NAME)).isSocket(), 'the socket is in the directory itself')
  holder.child.kill('SIGKILL')
  await holder.exited
})
