import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import type { LdapConfig } from '../../src/federation/ldap-directory.js'
import { freePort, run, startChild, tempDir, waitFor } from '../../support/processes.js'
const FIXTURE = fileURLToPath(new URL('../fixtures/directory.ldif', import.meta.url))
const SLAPD = '/usr/sbin/slapd'
const SLAPADD = '/usr/sbin/slapadd'

export interface Directory {
  url: string
  suffix: string
  adminDn: string
  adminPassword: string
}

/**
 * A throwaway OpenLDAP `slapd` on a free port with its own mdb database, seeded from
 * test/fixtures/directory.ldif, stopped and removed at the end of the test.
 */
export async function startDirectory (t: Test): Promise<Directory> {
  if (!existsSync(SLAPD) || !existsSync(SLAPADD)) {
    throw new Error('OpenLDAP is required for the federation tests: apt-get install slapd ldap-utils (`bash .ci/run` does it)')
  }
  const dir = await tempDir(t, 'ats-slapd-')
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
  const child = startChild(t, SLAPD, ['-f', conf, '-h', `${url}/`, '-d', '0'])
  await waitFor('slapd', async () => {
    if (child.exitCode !== null) throw new Error(`slapd exited with ${child.exitCode}`)
    return await run('ldapwhoami', ['-x', '-H', url, '-D', adminDn, '-w', adminPassword]).then(() => true, () => false)
  }, { timeoutMs: 15_000, everyMs: 100 })
  return { url, suffix, adminDn, adminPassword }
}

const tls = { caFile: undefined, rejectUnauthorized: true, startTls: false }

/** The service's directory settings for `directory` in template mode: the DN made from the username. */
export function templateMode (directory: Directory): LdapConfig {
  return { url: directory.url, timeoutMs: 3000, tls, mode: 'template', userDnTemplate: `uid={username},ou=people,${directory.suffix}` }
}

/** The same in search mode: the reader finds the entry by `searchFilter` (default: by uid). */
export function searchMode (directory: Directory, searchFilter = '(&(objectClass=inetOrgPerson)(uid={username}))'): LdapConfig {
  return {
    url: directory.url,
    timeoutMs: 3000,
    tls,
    mode: 'search',
    bindDn: `cn=reader,ou=services,${directory.suffix}`,
    bindPassword: 'reader-secret',
    searchBase: `ou=people,${directory.suffix}`,
    searchFilter
  }
}
