import { execFile, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import type { Test } from 'tap'

const run = promisify(execFile)
const FIXTURE = fileURLToPath(new URL('../fixtures/directory.ldif', import.meta.url))
const SLAPD = '/usr/sbin/slapd'
const SLAPADD = '/usr/sbin/slapadd'

export interface Directory {
  url: string
  suffix: string
  adminDn: string
  adminPassword: string
}

async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}

/**
 * A throwaway OpenLDAP `slapd` on a free port with its own mdb database, seeded from
 * test/fixtures/directory.ldif, stopped and removed at the end of the test.
 */
export async function startDirectory (t: Test): Promise<Directory> {
  if (!existsSync(SLAPD) || !existsSync(SLAPADD)) {
    throw new Error('OpenLDAP is required for the federation tests: apt-get install slapd ldap-utils (`bash .ci/run` does it)')
  }
  const dir = await mkdtemp(join(tmpdir(), 'ats-slapd-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  await mkdir(join(dir, 'data'))
  const suffix = 'dc=example,dc=org'
  const adminDn = `cn=admin,${suffix}`
  const adminPassword = 'admin-secret'
  const conf = join(dir, 'slapd.conf')
  await writeFile(conf, [
    'include /etc/ldap/schema/core.schema',
    'include /etc/ldap/schema/cosine.schema',
    'include /etc/ldap/schema/inetorgperson.schema',
    'modulepath /usr/lib/ldap',
    'moduleload back_mdb',
    `pidfile ${join(dir, 'slapd.pid')}`,
    'database mdb',
    'maxsize 10485760',
    `suffix "${suffix}"`,
    `rootdn "${adminDn}"`,
    `rootpw ${adminPassword}`,
    `directory ${join(dir, 'data')}`,
    // Anyone may bind (that is how passwords are checked); only bound users may read.
    'access to attrs=userPassword by anonymous auth by self write by * none',
    'access to * by users read by anonymous auth',
    ''
  ].join('\n'))
  await run(SLAPADD, ['-f', conf, '-l', FIXTURE])
  const port = await freePort()
  const url = `ldap://127.0.0.1:${port}`
  // -d 0: stay in the foreground (so the test owns the process) without debug output.
  const child = spawn(SLAPD, ['-f', conf, '-h', `${url}/`, '-d', '0'], { stdio: 'ignore' })
  t.teardown(async () => {
    if (child.exitCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  })
  const deadline = Date.now() + 15_000
  for (;;) {
    const ok = await run('ldapwhoami', ['-x', '-H', url, '-D', adminDn, '-w', adminPassword]).then(() => true, () => false)
    if (ok) break
    if (child.exitCode !== null) throw new Error(`slapd exited with ${child.exitCode}`)
    if (Date.now() > deadline) throw new Error('slapd did not answer within 15 s')
    await sleep(100)
  }
  return { url, suffix, adminDn, adminPassword }
}
