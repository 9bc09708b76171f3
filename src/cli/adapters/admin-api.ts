import type { AdminClient, AdminUser } from '../../admin/client.js'
import type { AccountGroups, AdminOperations } from '../operations.js'

/**
 * The operations over the admin API of a running service (admin/client.ts), for when one runs
 * (cli/admin-route.ts): the service changes its accounts itself, so nothing is lost to a copy
 * and its tokens end at once. Its refusals arrive as AdminApiError (exit-codes.ts).
 */
export function createAdminApiOperations (client: AdminClient): AdminOperations {
  return {
    // The service has the database; nothing here can refuse before the request does.
    async beforePassword () {},
    addUser: async (username, password, federated, kind) => await client.addUser(username, password, federated, kind),
    async setPassword (username, password) {
      const { user, ended } = await client.changeUser(username, { password })
      return { username: user.username, ended }
    },
    async setDisabled (username, disabled) {
      const { user, ended } = await client.changeUser(username, { disabled })
      return { username: user.username, ended }
    },
    unlockUser: async (username) => await client.unlockUser(username),
    resetTotp: async (username) => await client.resetTotp(username),
    setEmail: async (username, email) => (await client.changeUser(username, { email })).user,
    inviteUser: async (username, email) => await client.inviteUser(username, email),
    // The answer names no account (it is gone): the name as the operator gave it.
    deleteUser: async (username) => ({ username, ended: await client.deleteUser(username) }),
    users: () => client.users(),
    sessions: async (username) => await client.sessions(username),
    revokeSessions: async (username) => ({ username, ended: await client.revokeSessions(username) }),
    events: ({ user, since }) => client.events({ user, since }),
    createKey: async (username, name, days) => await client.createKey(username, name, days),
    keys: (username) => client.keys(username),
    revokeKey: async (id) => await client.revokeKey(id),
    accountGroups: async (username) => groupsOf(await client.user(username)),
    async changeLocalGroups (username, change) {
      const before = groupsOf(await client.user(username))
      // Read, then written whole: a change made by someone else between the two is overwritten.
      const after = groupsOf(await client.setGroups(before.username, change(before)))
      return { before, after }
    },
    groups: async () => await client.groups(),
    addOidcClient: async (oidcClient) => await client.addOidcClient(oidcClient),
    oidcClients: async () => await client.oidcClients(),
    removeOidcClient: async (clientId) => await client.removeOidcClient(clientId),
    rotateSigningKeys: async () => await client.rotateSigningKeys()
  }
}

const groupsOf = (user: AdminUser): AccountGroups => ({ username: user.username, groups: user.groups, directoryGroups: user.directory_groups })
