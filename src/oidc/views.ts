import type { OidcClientRow } from './client-store.js'
import { formatExpirationDate } from '../core/time.js'

/** A client as the admin API and the command line show it (api-contract, Single sign-on): never its secret or the secret's hash. */
export function clientView (client: OidcClientRow) {
  return {
    client_id: client.clientId,
    name: client.name,
    redirect_uris: client.redirectUris,
    post_logout_redirect_uris: client.postLogoutRedirectUris,
    public: client.public,
    backchannel_logout_uri: client.backchannelLogoutUri,
    created: formatExpirationDate(client.createdAt.getTime())
  }
}

export type ClientView = ReturnType<typeof clientView>
