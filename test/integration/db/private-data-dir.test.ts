import t from 'tap'
import { spawnSync } from 'node:child_process'
import { chmod, lstat, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { startService, requireCurrentBuild } from '../../../support/service.js'
import { tempDir } from '../../../support/processes.js'

/*
 * The embedded database's directory is the service account's alone: it holds the
 * argon2id hashes (in the WAL and the tables) and the local admin key. A real `serve` on the
 * embedded default, then what another user of the host can do with its files.
 */

requireCurrentBuild()

const BOOTSTRAP = { AUTH_BOOTSTRAP_USERNAME: 'admin', AUTH_BOOTSTRAP_PASSWORD: 'first run & secret' }

/** Every entry under `dir` (itself included) that grants group or other any access, as `mode path`. */
async function shared (dir: string): Promise<string[]> {
  const found: string[] = []
  const walk = async (path: string): Promise<void> => {
    // The running service writes its files by rename from a temporary one (owner.json.<pid>.tmp):
    // an entry listed and renamed away before its lstat is gone, not shared (seen once in CI).
    const stats = await lstat(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined
      throw error
    })
    if (stats === undefined || stats.isSymbolicLink()) return
    if ((stats.mode & 0o077) !== 0) found.push(`${(stats.mode & 0o7777).toString(8)} ${path}`)
    if (stats.isDirectory()) for (const entry of await readdir(path)) await walk(join(path, entry))
  }
  await walk(dir)
  return found
}

/** What `nobody` gets from `cat file`: its exit status and what it printed. */
function catAsNobody (file: string): { status: number | null, stdout: string } {
  const run = spawnSync('runuser', ['-u', 'nobody', '--', 'cat', file], { encoding: 'latin1', maxBuffer: 64 * 1024 * 1024 })
  if (run.error !== undefined) throw run.error
  return { status: run.status, stdout: run.stdout }
}

async function firstWalSegment (data: string): Promise<string> {
  const segment = (await readdir(join(data, 'pg_wal'))).find((name) => /^[0-9A-F]{24}$/.test(name))
  if (segment === undefined) throw new Error('no WAL segment')
  return join(data, 'pg_wal', segment)
}

t.test('a fresh start: the directory is 0700 and nothing in it is open to group or other; nobody cannot read the WAL', async (t) => {
  t.equal(process.getuid?.(), 0, 'runs as root, to act as nobody')
  const parent = await tempDir(t, 'ats-private-')
  // A parent others may pass through (as a home or /srv is), so that only the data directory's own modes protect it.
  await chmod(parent, 0o755)
  const data = join(parent, 'data')
  const service = await startService(t, { ...BOOTSTRAP, AUTH_DATA_DIR: data })
  t.same(await shared(data), [], 'no entry open to group or other')
  t.equal(((await lstat(data)).mode & 0o777).toString(8), '700', 'the directory is 0700')
  const wal = await firstWalSegment(data)
  const read = catAsNobody(wal)
  t.not(read.status, 0, 'nobody cannot read the WAL')
  t.notMatch(read.stdout, /\$argon2id\$/, 'and sees no hash in it')
  t.not(catAsNobody(join(data, 'postgresql.conf')).status, 0, 'nor postgresql.conf')
  t.notMatch(service.output(), /open to other users/, 'a fresh directory needs no tightening')

  // As an earlier version left it: folders 0755, files 0666. The next start takes that away, and says so.
  await service.stop()
  const loosen = async (path: string): Promise<void> => {
    const stats = await lstat(path)
    if (stats.isSymbolicLink()) return
    await chmod(path, stats.isDirectory() ? 0o755 : 0o666)
    if (stats.isDirectory()) for (const entry of await readdir(path)) await loosen(join(path, entry))
  }
  await loosen(data)
  t.not((await shared(data)).length, 0, 'loosened')
  t.equal(catAsNobody(wal).status, 0, 'loosened, nobody reads the WAL (the check can fail)')
  const again = await startService(t, { ...BOOTSTRAP, AUTH_DATA_DIR: data })
  t.same(await shared(data), [], 'tightened at start')
  t.not(catAsNobody(wal).status, 0, 'nobody cannot read the WAL again')
  const tightened = /"tightened":\d+.*open to other users: group and other access removed/
  t.match(await again.outputMatching(tightened), tightened, 'the start says it tightened the directory')
  await again.stop()
})
