import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

/**
 * argon2id on threads of their own, at a low CPU priority (nice 10).
 *
 * Hashing is the one CPU-bound thing the service does. On libuv's thread pool it ran at the
 * event loop's priority, so a login storm took the cores that Authenticate's event loop,
 * Redis and the network needed: Authenticate's p99 tripled (bench/README.md). Here each
 * hashing thread lowers its own priority first (on Linux the nice value is per thread;
 * elsewhere the call may be refused and the thread runs at normal priority), so the
 * scheduler runs the event loop whenever it has work and gives hashing every idle cycle:
 * a Login waits a little longer during a storm, an Authenticate does not. Nice 10, not 19:
 * against a saturated core a nice-10 thread still gets about a tenth of it (scheduler
 * weights 110 and 1024), a nice-19 thread about 1.5 %, which let Logins starve on a busy
 * machine (a test saw a failed Login take 47 ms instead of 13 while other tests ran).
 *
 * Why not piscina (5.3), measured with the same thread source, threads and nice value behind
 * the same fair queue: its dispatch costs more, 159-244 µs of process CPU per verify at
 * argon2's cheapest parameters against 121-169 µs here (8 alternated pairs, piscina higher in
 * each), and what it adds does not serve here. Its queue cannot refuse one account or address
 * with a 429, so fair-queue.ts stays in front and piscina's queue would stay empty; its handler
 * must be a file on disk (this source is evaluated: the build emits nothing more, and tests
 * from src/ run the same thread as dist/); its niceIncrement needs an optional native package
 * without which the threads silently keep the event loop's priority. The Login rows of the
 * benchmark did not tell the two apart on a machine at load 17-25: Login ÷ raw verify
 * 0.20-0.85 here, 0.27-0.86 with piscina.
 */

export interface Argon2Options {
  algorithm: number
  version: number
  memoryCost: number
  timeCost: number
  parallelism: number
  outputLen: number
}

export interface HashWorkers {
  hash (password: string, options: Argon2Options): Promise<string>
  /** Rejects for an unreadable hash, as the binding does; with a HashThreadError when the thread failed. */
  verify (hash: string, password: string): Promise<boolean>
  /** Stops every thread; operations still running are rejected. */
  close (): Promise<void>
}

/** The hashing thread failed (it died, could not start, or was closed): no answer about the password. */
export class HashThreadError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'HashThreadError'
  }
}

type Operation = { op: 'hash', password: string, options: Argon2Options } | { op: 'verify', hash: string, password: string }
type Reply = { id: number, ok: true, value: string | boolean } | { id: number, ok: false, message: string }

interface Pending {
  resolve: (value: string | boolean) => void
  reject: (error: Error) => void
}

// CommonJS, so the binding (a CommonJS module) is required by its resolved path in any layout.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
try { require('node:os').setPriority(workerData.nice) } catch {}
const argon2 = require(workerData.binding)
parentPort.on('message', (request) => {
  try {
    const value = request.op === 'hash'
      ? argon2.hashSync(request.password, request.options)
      : argon2.verifySync(request.hash, request.password)
    parentPort.postMessage({ id: request.id, ok: true, value })
  } catch (error) {
    parentPort.postMessage({ id: request.id, ok: false, message: error instanceof Error ? error.message : String(error) })
  }
})
`

const BINDING = createRequire(import.meta.url).resolve('@node-rs/argon2')

interface Thread {
  worker: Worker
  pending: Map<number, Pending>
}

/**
 * `size` threads, started on first use; an operation goes to the thread with the fewest
 * in flight (the caller's queue keeps that at one each). A thread that dies fails what it
 * held and is replaced.
 */
export function createHashWorkers (size: number, nice = 10): HashWorkers {
  const threads: Array<Thread | undefined> = new Array<Thread | undefined>(size).fill(undefined)
  let nextId = 1
  let closed = false

  const start = (slot: number): Thread => {
    // No execArgv of the parent's: `--input-type=module` or a loader must not change how this source runs.
    const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: { binding: BINDING, nice } })
    // Idle threads never keep the process alive.
    worker.unref()
    const thread: Thread = { worker, pending: new Map() }
    const failAll = (error: Error): void => {
      for (const pending of thread.pending.values()) pending.reject(error)
      thread.pending.clear()
      if (threads[slot] === thread) threads[slot] = undefined
    }
    worker.on('message', (reply: Reply) => {
      const pending = thread.pending.get(reply.id)
      if (pending === undefined) return
      thread.pending.delete(reply.id)
      if (thread.pending.size === 0) worker.unref()
      if (reply.ok) pending.resolve(reply.value)
      else pending.reject(new Error(reply.message))
    })
    worker.on('error', (error) => { failAll(new HashThreadError(`hashing thread failed: ${error.message}`)) })
    worker.on('exit', (code) => { failAll(new HashThreadError(`hashing thread exited (${code})`)) })
    threads[slot] = thread
    return thread
  }

  const run = async (request: Operation): Promise<string | boolean> => {
    if (closed) throw new HashThreadError('hashing threads closed')
    let slot = 0
    for (let index = 1; index < size; index++) {
      if ((threads[index]?.pending.size ?? 0) < (threads[slot]?.pending.size ?? 0)) slot = index
    }
    const thread = threads[slot] ?? start(slot)
    const id = nextId++
    return await new Promise<string | boolean>((resolve, reject) => {
      thread.pending.set(id, { resolve, reject })
      // Busy threads keep the process alive until they answer.
      thread.worker.ref()
      thread.worker.postMessage({ ...request, id })
    })
  }

  return {
    hash: async (password, options) => String(await run({ op: 'hash', password, options })),
    verify: async (hash, password) => await run({ op: 'verify', hash, password }) === true,
    async close () {
      closed = true
      await Promise.all(threads.map(async (thread) => { await thread?.worker.terminate() }))
    }
  }
}
