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

export interface DirectoryOptions {
  /**
   * Groups as directories keep them: the `nis` schema (posixGroup, memberUid) and the `memberof`
   * overlay, which keeps each person's `memberOf` as groups (groupOfNames) change. The groups
   * themselves are added once slapd runs (slapadd runs no overlay): `addEntries`. One group,
   * `cn=hidden,ou=groups`, nobody may read, as a directory's rules may hide one.
   */
  groups?: boolean
}

/**
 * A throwaway OpenLDAP `slapd` on a free port with its own mdb database, seeded from
 * test/fixtures/directory.ldif, stopped and removed at the end of the test.
 */
export async function startDirectory (t: Test, options: DirectoryOptions = {}): Promise<Directory> {
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
    ...(options.groups === true ? ['include /etc/ldap/schema/nis.schema'] : []),
    'include /etc/ldap/schema/inetorgperson.schema',
    'modulepath /usr/lib/ldap',
    'moduleload back_mdb',
    ...(options.groups === true ? ['moduleload memberof'] : []),
    `pidfile ${join(dir, 'slapd.pid')}`,
    'database mdb',
    'maxsize 10485760',
    `suffix "${suffix}"`,
    `rootdn "${adminDn}"`,
    `rootpw ${adminPassword}`,
    `directory ${join(dir, 'data')}`,
    ...(options.groups === true ? ['overlay memberof'] : []),
    // Anyone may bind (that is how passwords are checked); only bound users may read.
    ...(options.groups === true ? [`access to dn.exact="cn=hidden,ou=groups,${suffix}" by * none`] : []),
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

/** Changes the directory as its administrator: `ldif` as `ldapmodify` reads it (`changetype: add`, `modify`, `delete`). */
export async function modifyDirectory (directory: Directory, ldif: string): Promise<void> {
  const child = run('ldapmodify', ['-x', '-H', directory.url, '-D', directory.adminDn, '-w', directory.adminPassword])
  child.child.stdin?.end(ldif)
  await child
}

/** Adds entries (LDIF without changetypes) as the administrator, through slapd so that its overlays see them. */
export async function addEntries (directory: Directory, ldif: string): Promise<void> {
  const child = run('ldapmodify', ['-a', '-x', '-H', directory.url, '-D', directory.adminDn, '-w', directory.adminPassword])
  child.child.stdin?.end(ldif)
  await child
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
