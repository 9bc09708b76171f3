/**
 * Federation: accounts whose password is a directory's (LDAP). Login binds as the person
 * (`ldap-directory.ts`, with `ldap-escape.ts` for filters and DNs) and reads their directory
 * groups (`ldap-groups.ts`, `ldap-entry.ts`); the core's Login calls it through its `Directory`
 * port, and the composition root makes one when `AUTH_LDAP_URL` is set.
 */
export { createLdapDirectory } from './ldap-directory.js'
