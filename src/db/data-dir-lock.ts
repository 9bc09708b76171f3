import { chmod, mkdir, readFile, rename, rmdir, stat, unlink, writeFile } from 'node:fs/promises'
import { createConnection, createServer, type Server } from 'node:net'
import { hostname } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { privateContents, privateDirectory } from './private-files.js'

/**
 * PGlite is one process's Postgres: a second process that opens the same data directory
 * works on a copy of its own and the two overwrite each other's files. The process that
 * opens the directory first owns it until it closes it (or dies); any other is refused.
 *
 * The lock is a Unix socket in the directory that its owner listens on, not a pid file.
 * Binding a socket path is an atomic create-if-absent, and whether a process still owns it
 * is what the kernel answers to connect(): refused from the instant the owner is gone,
 * however it ended (SIGKILL, OOM, power loss). A pid says less: in a container the service
 * is pid 1 again after a restart (a pid file then blocks forever), a pid is reused by an
 * unrelated program, pids mean nothing across the pid namespaces of two containers that
 * share a volume, and a heartbeat (proper-lockfile's mtime) goes stale while a live owner's
 * event loop is blocked in a long WASM checkpoint, so the lock would be taken from a live
 * owner. The socket also answers who owns the directory (the record below, always current),
 * and a later version can take commands through it.
 */

/** The socket: its owner listens on it for as long as it has the directory open. */
export const LOCK_SOCKET_NAME = 'auth-token-service.lock'
/** The same record as the socket answers, for people and tools that read files. */
export const OWNER_FILE_NAME = 'auth-token-service.owner.json'
/**
 * The running service's admin access for the local command line (admin/local-access.ts): its
 * writer's, so it goes with the lock, and one a dead owner left goes when the lock is next taken.
 */
export const ADMIN_ACCESS_FILE_NAME = 'auth-token-service.admin.json'
/** Held for the milliseconds it takes to remove a dead owner's socket. */
const REAP_CLAIM_NAME = 'auth-token-service.reap'
/** A reap claim this old was left by a process that died in those milliseconds. */
const REAP_CLAIM_STALE_MS = 10_000
/** sun_path holds 108 bytes with its NUL; Node truncates a longer path without a word. */
const SOCKET_PATH_MAX_BYTES = 107
const PROBE_TIMEOUT_MS = 1000
const RECORD_MAX_BYTES = 64 * 1024

/** Who has the directory open: what a refused process prints, and what a later one reads to find the service. */
export interface DataDirOwner {
  service: 'auth-token-service'
  pid: number
  hostname: string
  /** `serve`, or the command line's command (`user add`, `migrate`, …). */
  command: string
  /** When the owner took the directory (ISO 8601, UTC). */
  startedAt: string
  dataDir: string
  /** Where the service answers HTTP from this machine, once it listens. */
  url: string | null
  /** The internal listener (metrics, docs, admin), once the service has one. */
  internalUrl: string | null
}

export interface DataDirLock {
  readonly owner: Readonly<DataDirOwner>
  /** Entries of the directory (itself included) that were open to group or other and were made private when it was taken. */
  readonly tightened: number
  /** Records where the service listens (the socket answers it and the file says it from now on). */
  announce (listening: Partial<Pick<DataDirOwner, 'url' | 'internalUrl'>>): Promise<void>
  /** Gives the directory up; call it after the database is closed. */
  release (): Promise<void>
}

/** The data directory is open in another process; `holder` is what it said of itself, when it could. */
export class DataDirBusyError extends Error {
  readonly dataDir: string
  readonly holder: DataDirOwner | undefined
  constructor (dataDir: string, holder: DataDirOwner | undefined, message: string) {
    super(message)
    this.name = 'DataDirBusyError'
    this.dataDir = dataDir
    this.holder = holder
  }
}

/** The directory cannot carry the lock (a path too long for a socket, a filesystem without sockets). */
export class DataDirLockError extends Error {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'DataDirLockError'
  }
}

type Probe =
  | { state: 'alive', owner: DataDirOwner | undefined }
  | { state: 'dead' }
  | { state: 'gone' }
  | { state: 'unknown', code: string }

function errorCode (error: unknown): string {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : 'unknown error'
}

function isOwner (value: unknown): value is DataDirOwner {
  if (typeof value !== 'object' || value === null) return false
  const record = value as Record<string, unknown>
  return record.service === 'auth-token-service' && typeof record.pid === 'number' && typeof record.command === 'string'
}

/** The socket's path as this process can bind it: absolute when it fits, else relative to the working directory. */
function socketAddress (dir: string): string {
  const absolute = join(dir, LOCK_SOCKET_NAME)
  if (Buffer.byteLength(absolute) <= SOCKET_PATH_MAX_BYTES) return absolute
  const fromHere = relative(process.cwd(), absolute)
  if (Buffer.byteLength(fromHere) <= SOCKET_PATH_MAX_BYTES) return fromHere
  throw new DataDirLockError(`the data directory ${dir} is too deep for its lock socket (${Buffer.byteLength(absolute)} bytes, at most ${SOCKET_PATH_MAX_BYTES}): ` +
    'use a shorter AUTH_DATA_DIR or start from a working directory closer to it')
}

/** Connects to the socket: the kernel says whether anyone listens; a listener says who it is. */
async function probe (address: string): Promise<Probe> {
  return await new Promise((resolve) => {
    const socket = createConnection(address)
    let connected = false
    let received = ''
    const finish = (result: Probe): void => {
      clearTimeout(timer)
      socket.destroy()
      resolve(result)
    }
    const parsed = (): DataDirOwner | undefined => {
      try {
        const value: unknown = JSON.parse(received)
        return isOwner(value) ? value : undefined
      } catch {
        return undefined
      }
    }
    // A live owner whose event loop is busy (a long checkpoint) is still alive: the kernel accepted the connection.
    const timer = setTimeout(() => { finish(connected ? { state: 'alive', owner: undefined } : { state: 'unknown', code: 'ETIMEDOUT' }) }, PROBE_TIMEOUT_MS)
    socket.setEncoding('utf8')
    socket.on('connect', () => { connected = true })
    socket.on('data', (chunk: string) => {
      received += chunk
      if (received.length > RECORD_MAX_BYTES) finish({ state: 'alive', owner: undefined })
    })
    socket.on('end', () => { finish({ state: 'alive', owner: parsed() }) })
    socket.on('error', (error) => {
      if (connected) { finish({ state: 'alive', owner: parsed() }); return }
      const code = errorCode(error)
      // ECONNREFUSED: a socket file nobody listens on (its owner died), or not a socket at all.
      finish(code === 'ECONNREFUSED' ? { state: 'dead' } : code === 'ENOENT' ? { state: 'gone' } : { state: 'unknown', code })
    })
  })
}

async function listen (address: string, owner: () => DataDirOwner): Promise<Server | 'taken'> {
  const server = createServer((socket) => {
    socket.on('error', () => {})
    socket.end(`${JSON.stringify(owner())}\n`)
  })
  return await new Promise((resolve, reject) => {
    server.once('error', (error) => {
      if (errorCode(error) === 'EADDRINUSE') resolve('taken')
      else {
        reject(new DataDirLockError(`cannot create the lock socket ${address} (${errorCode(error)}): ` +
          'the embedded database needs a local filesystem that holds Unix sockets; use another AUTH_DATA_DIR, or Postgres (DATABASE_URL)', { cause: error }))
      }
    })
    server.listen(address, () => {
      // The lock must never keep a process alive that has nothing else to do,
      // nor end one: a failed accept (too many open files) only costs a probe its answer.
      server.unref()
      server.on('error', () => {})
      // Made as the umask says; the service's own only (the directory is 0700 as well).
      chmod(address, 0o600).then(() => { resolve(server) }, (error: unknown) => {
        server.close()
        reject(new DataDirLockError(`cannot make the lock socket ${address} private (${errorCode(error)})`, { cause: error }))
      })
    })
  })
}

/**
 * Removes a dead owner's socket. Two processes that both saw it dead must not both remove
 * "it": the second would remove the socket the first has just bound. So the removal runs
 * under a claim (mkdir is atomic) and checks again under it; bind never replaces a path,
 * so what was dead under the claim is still the same file when it is removed.
 * (Exported for its test; lockDataDir is the way in.)
 */
export async function reapDeadSocket (dir: string, address: string): Promise<void> {
  const claim = join(dir, REAP_CLAIM_NAME)
  try {
    await mkdir(claim, { mode: 0o700 })
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') throw error
    const age = await stat(claim).then((s) => Date.now() - s.mtimeMs, () => 0)
    if (age > REAP_CLAIM_STALE_MS) await rmdir(claim).catch(() => {})
    await sleep(20)
    return
  }
  try {
    if ((await probe(address)).state === 'dead') await unlink(address).catch((error: unknown) => { if (errorCode(error) !== 'ENOENT') throw error })
  } finally {
    await rmdir(claim).catch(() => {})
  }
}

/** The record the owner last wrote, for when it is too busy to answer on the socket. */
async function readOwnerFile (dir: string): Promise<DataDirOwner | undefined> {
  try {
    const value: unknown = JSON.parse(await readFile(join(dir, OWNER_FILE_NAME), 'utf8'))
    return isOwner(value) ? value : undefined
  } catch {
    return undefined
  }
}

async function writeOwnerFile (dir: string, owner: DataDirOwner): Promise<void> {
  // Readers never see half a record: a whole file replaces the last one.
  const temporary = join(dir, `${OWNER_FILE_NAME}.${process.pid}.tmp`)
  await writeFile(temporary, `${JSON.stringify(owner, null, 2)}\n`, { mode: 0o600 })
  await rename(temporary, join(dir, OWNER_FILE_NAME))
}

function describeHolder (holder: DataDirOwner | undefined): string {
  if (holder === undefined) return 'another process'
  if (holder.command === 'serve') {
    const where = holder.url === null ? 'starting' : `listening on ${holder.url}`
    return `the running service (pid ${holder.pid}${holder.hostname === hostname() ? '' : ` on ${holder.hostname}`}, ${where})`
  }
  return `\`auth-token-service ${holder.command}\` (pid ${holder.pid})`
}

/** One line: who has the directory and what to do about it. */
function busyMessage (dir: string, holder: DataDirOwner | undefined, command: string): string {
  const what = holder !== undefined && holder.command !== 'serve'
    ? 'try again when it has finished'
    : command === 'serve'
      ? 'stop it first, or give this one another AUTH_DATA_DIR'
      : 'stop it first, then run this command again (account and session commands go through its admin API: README, "Administration")'
  return `the embedded database in ${dir} is in use by ${describeHolder(holder)}: ${what}`
}

/**
 * Takes the data directory for this process, or throws DataDirBusyError naming the
 * process that has it. `command` is what this process is doing (`serve`, `user add`, …).
 */
export async function lockDataDir (dataDir: string, command: string): Promise<DataDirLock> {
  const dir = resolve(dataDir)
  const dirTightened = await privateDirectory(dir)
  const address = socketAddress(dir)
  let owner: DataDirOwner = {
    service: 'auth-token-service',
    pid: process.pid,
    hostname: hostname(),
    command,
    startedAt: new Date().toISOString(),
    dataDir: dir,
    url: null,
    internalUrl: null
  }
  for (let attempt = 0; attempt < 20; attempt++) {
    const server = await listen(address, () => owner)
    if (server !== 'taken') {
      let tightened = dirTightened
      try {
        // Only its owner walks the directory: another process's files are not changed under it.
        tightened += await privateContents(dir)
        // A dead owner's admin key opens nothing (its listener is gone), but it is no one's to keep.
        await unlink(join(dir, ADMIN_ACCESS_FILE_NAME)).catch(() => {})
        await writeOwnerFile(dir, owner)
      } catch (error) {
        await new Promise((resolve) => { server.close(resolve) })
        throw error
      }
      let released = false
      return {
        get owner () { return owner },
        tightened,
        async announce (listening) {
          owner = { ...owner, ...listening }
          if (!released) await writeOwnerFile(dir, owner)
        },
        async release () {
          if (released) return
          released = true
          await unlink(join(dir, OWNER_FILE_NAME)).catch(() => {})
          await unlink(join(dir, ADMIN_ACCESS_FILE_NAME)).catch(() => {})
          // Closing the server removes the socket file.
          await new Promise((resolve) => { server.close(resolve) })
        }
      }
    }
    const found = await probe(address)
    switch (found.state) {
      case 'alive': {
        const holder = found.owner ?? await readOwnerFile(dir)
        throw new DataDirBusyError(dir, holder, busyMessage(dir, holder, command))
      }
      case 'unknown':
        // Fail closed: a directory that may be open elsewhere is never opened here too.
        throw new DataDirBusyError(dir, undefined, `the embedded database in ${dir} may be in use: its lock ${address} cannot be checked (${found.code}); ` +
          'if no auth-token-service runs on it, remove that file and try again')
      case 'dead':
        await reapDeadSocket(dir, address)
        break
      case 'gone':
        break
    }
  }
  throw new DataDirLockError(`could not take the lock of ${dir}: other processes keep taking and giving it up; try again`)
}

/**
 * Throws what lockDataDir would throw while another process has the directory, without
 * taking it or creating anything: for a command to say so before it asks for a password.
 */
export async function assertDataDirFree (dataDir: string, command: string): Promise<void> {
  const dir = resolve(dataDir)
  const found = await probe(socketAddress(dir))
  if (found.state === 'alive') {
    const holder = found.owner ?? await readOwnerFile(dir)
    throw new DataDirBusyError(dir, holder, busyMessage(dir, holder, command))
  }
}

/**
 * The process that has the data directory open, or undefined when none has: how a later
 * command finds the running service (its pid and URL) from the directory alone.
 */
export async function findDataDirOwner (dataDir: string): Promise<DataDirOwner | undefined> {
  const dir = resolve(dataDir)
  const found = await probe(socketAddress(dir))
  return found.state === 'alive' ? found.owner ?? await readOwnerFile(dir) : undefined
}
