import t from 'tap'
import type { LdapConfig } from '../../src/federation/ldap-directory.js'
import { createLdapDirectory } from '../../src/federation/ldap-directory.js'
import { buildTestApp } from '../support/app.js'
import { searchMode, startDirectory, templateMode, type Directory } from '../support/slapd.js'

/*
 * Canonical usernames against a real slapd: the directory matches `CAROL`, `carol ` or `ｃａｒｏｌ`
 * to carol's entry. Before, each such login made a new enabled federated account and a
 * token, past `user disable carol` and past dave's lockout. Now the account is the one the
 * directory names (uid, read back after the bind), in canonical form.
 */

function modes (directory: Directory): Array<[string, LdapConfig]> {
  return [
    ['template', templateMode(directory)],
    // Also by surname: a caller may type a name the directory knows by another attribute.
    ['search', searchMode(directory, '(&(objectClass=inetOrgPerson)(|(uid={username})(sn={username})))')]
  ]
}

t.test('against a real slapd', async (t) => {
  const directory = await startDirectory(t)

  for (const [mode, ldap] of modes(directory)) {
    t.test(`${mode} mode: the directory's uid is the identity`, async (t) => {
      const dir = createLdapDirectory(ldap)
      t.same(await dir.identify('CAROL', 'carol-directory-pw'), { username: 'carol', groups: [] }, 'read back from the entry, not the name typed')
      t.equal(await dir.identify('carol', 'wrong'), null)
      if (mode === 'search') t.same(await dir.identify('singer', 'carol-directory-pw'), { username: 'carol', groups: [] }, 'found by surname, named by uid')
    })

    t.test(`${mode} mode: a disabled directory user stays disabled under every variant, with no new account`, async (t) => {
      const { app } = await buildTestApp(t, 'embedded', { ldap, ldapAutoProvision: true })
      const login = async (username: string) => await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password: 'carol-directory-pw' } })
      t.equal((await login('carol')).statusCode, 200, 'provisioned at the first login')
      await app.accounts.setDisabled('carol', true)
      for (const variant of ['carol', 'Carol', 'CAROL', 'ｃａｒｏｌ', ...(mode === 'search' ? ['singer', 'SINGER'] : [])]) {
        t.equal((await login(variant)).statusCode, 401, `${JSON.stringify(variant)}: disabled`)
      }
      for (const variant of ['carol ', ' carol', 'carol\t']) t.equal((await login(variant)).statusCode, 400, `${JSON.stringify(variant)}: refused`)
      t.same((await app.accounts.list()).map((account) => [account.username, account.disabled]), [['carol', true]], 'one account, still disabled')
    })

    t.test(`${mode} mode: a locked directory user stays locked under every variant`, async (t) => {
      const { app } = await buildTestApp(t, 'embedded', { ldap, ldapAutoProvision: true, maxFailedLogins: 3 })
      const login = async (username: string, password: string) => await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password } })
      t.equal((await login('bob', 'bob-directory-pw')).statusCode, 200)
      for (const variant of ['bob', 'Bob', 'BOB']) t.equal((await login(variant, 'wrong')).statusCode, 401)
      for (const variant of ['bob', 'Bob', 'ｂｏｂ', ...(mode === 'search' ? ['builder'] : [])]) {
        t.equal((await login(variant, 'bob-directory-pw')).statusCode, 429, `${variant}: locked`)
      }
      t.same((await app.accounts.list()).map((account) => account.username), ['bob'], 'no account per variant')
    })
  }
})
