import { spawn } from 'node:child_process'
import { readFile, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { freePort, tempDir } from '../../../support/processes.js'

/*
 * README's quick start runs top to bottom as written: the block between the
 * `quick-start` markers, in bash, against a fresh embedded start. Two changes only, each for
 * the run's sake and not the reader's: `npm ci` is left out (the suite runs from the installed
 * tree; a fresh install under it would pull it away), and port 3000 becomes a free port (a
 * developer's own service may hold 3000). It runs in a directory of its own that links the
 * checkout's files, so its ./data and service.log are new.
 */

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const LINKED = ['package.json', 'package-lock.json', 'node_modules', 'dist', 'packages', 'sql', 'src', 'tsconfig.json', 'tsconfig.build.json']

const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
const block = /<!-- quick-start -->\n```sh\n([\s\S]*?)```\n<!-- \/quick-start -->/.exec(readme)?.[1]

t.test('the quick start runs as written', async (t) => {
  if (block === undefined) { t.fail('README has no block between <!-- quick-start --> and <!-- /quick-start -->'); return }
  t.match(block, /^npm ci\n/, 'it starts with npm ci, as a fresh clone must')
  const dir = await tempDir(t, 'ats-quick-start-')
  for (const name of LINKED) await symlink(join(ROOT, name), join(dir, name))
  const port = await freePort()
  const script = block.replace(/^npm ci\n/, '').replaceAll('localhost:3000', `localhost:${port}`)

  const env = { ...process.env, INTERNAL_PORT: String(await freePort()), PORT: String(port), DATABASE_URL: '', REDIS_URL: '', AUTH_DATA_DIR: '' }
  const child = spawn('bash', ['-e', '-c', script], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString() })
  const killer = setTimeout(() => { child.kill('SIGKILL') }, 120_000)
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  clearTimeout(killer)

  t.equal(code, 0, `bash ran it to the end (stderr: ${err.slice(-800)})`)
  const lines = out.split('\n').filter((line) => line !== '')
  t.match(lines[0], /^\{"status":0,"message":"Success","expiration_date":"[^"]+","account_id":"\d+","username":"admin"/, 'Authenticate: Success for admin')
  t.equal(lines[1], '{"status":0,"message":"Success"}', 'Logout: Success')
  t.equal(lines[2], '{"status":403,"message":"Unauthorized"}', 'Authenticate after the Logout: Unauthorized')
  t.ok(lines.slice(3).some((line) => /\balice\b/.test(line)), 'user list shows the added account')
  t.ok(lines.slice(3).some((line) => /\badmin\b/.test(line)), 'and the bootstrap one')
  const log = await readFile(join(dir, 'service.log'), 'utf8')
  t.match(log, /"msg":"closed"/, 'kill %1 stopped the service cleanly')
  // admin / change me: the quick start is reached from this machine only (HOST=127.0.0.1).
  const listening = [...log.matchAll(/"msg":"Server listening at (http:\/\/[^"]+)"/g)].map((match) => match[1])
  t.same(listening, [`http://127.0.0.1:${port}`], 'it listened on loopback only')
})
