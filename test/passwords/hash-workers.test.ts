import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createHashWorkers, HashThreadError } from '../../src/passwords/hash-workers.js'
import { createPasswordHasher } from '../../src/passwords/hasher.js'
import { StatusError } from '../../src/errors/status.js'

const OPTIONS = { algorithm: 2, version: 1, memoryCost: 19456, timeCost: 2, parallelism: 1, outputLen: 32 }

/** Threads of this process at the given nice value (Linux: the nice value is per thread). */
function threadsAtNice (nice: number): number {
  let count = 0
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      // Fields after the command name: state is the 1st, nice the 17th.
      const fields = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
      if (Number(fields[16]) === nice) count++
    } catch {
      // The thread ended while we looked.
    }
  }
  return count
}

t.test('hash and verify on threads of the lowest priority', async (t) => {
  const workers = createHashWorkers(2)
  t.teardown(async () => { await workers.close() })
  t.equal(threadsAtNice(10), 0, 'no thread before the first use')
  const [first, second] = await Promise.all([workers.hash('secret one', OPTIONS), workers.hash('secret two', OPTIONS)])
  t.match(first, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/, 'a PHC string at the given parameters')
  t.not(first, second)
  t.equal(await workers.verify(first ?? '', 'secret one'), true, 'the right password')
  t.equal(await workers.verify(first ?? '', 'secret two'), false, 'another password')
  await t.rejects(workers.verify('not a hash', 'x'), 'an unreadable hash rejects (the hasher turns that into false)')
  t.equal(threadsAtNice(10), 2, 'two hashing threads, each at nice 10')
  t.equal(threadsAtNice(0) >= 1, true, 'the event loop keeps its priority')
})

t.test('close: later operations are refused, and no thread is left', async (t) => {
  const workers = createHashWorkers(1)
  await workers.hash('x', OPTIONS)
  const running = workers.hash('y', OPTIONS)
  await workers.close()
  await t.rejects(running, HashThreadError, 'an operation still running when closed fails, as a thread failure')
  await t.rejects(workers.hash('z', OPTIONS), HashThreadError)
  t.equal(threadsAtNice(10), 0)
})

t.test('idle hashing threads do not keep a process alive', async (t) => {
  const module = fileURLToPath(new URL('../../dist/passwords/hash-workers.js', import.meta.url))
  const script = `import { createHashWorkers } from ${JSON.stringify(module)}
const workers = createHashWorkers(2)
console.log((await workers.hash('x', ${JSON.stringify(OPTIONS)})).slice(0, 10))`
  const started = Date.now()
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  const code = await new Promise<number | null>((resolve) => { child.on('close', resolve) })
  t.equal(code, 0)
  t.equal(out.trim(), '$argon2id$', 'it hashed')
  t.ok(Date.now() - started < 10_000, 'and exited by itself without close()')
})

t.test('the hasher: a failed thread is a 503, an unreadable hash is a plain mismatch', async (t) => {
  const hasher = createPasswordHasher(undefined, { concurrency: 1, maxQueued: 4 })
  const stored = await hasher.hash('pw')
  t.equal(await hasher.verify(stored, 'pw'), true)
  t.equal(await hasher.verify('$argon2id$garbage', 'pw'), false, 'a malformed stored hash lets nobody in')
  const running = hasher.verify(stored, 'pw')
  await hasher.close()
  const failure = await running.then(() => undefined, (error: unknown) => error)
  t.ok(failure instanceof StatusError && failure.httpStatus === 503, 'no answer from the thread: 503, not false (which would count as a wrong password)')
  const later = await hasher.hash('x').then(() => undefined, (error: unknown) => error)
  t.ok(later instanceof StatusError && later.httpStatus === 503, 'hashing too')
})
