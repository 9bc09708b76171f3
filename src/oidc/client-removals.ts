import { idDigest, type ArtifactStore } from './artifact-store.js'

/**
 * Marks of removed clients, where every instance looks (beside the provider's artifacts: Redis, or
 * the embedded default's memory). A client's removal sets its mark before anything else, and an
 * instance serves a client from its own memory (clients.ts, metadataOf) only while the client's id
 * has no mark: so a client cached on any instance is unknown to all of them the moment its removal
 * begins, as when every request read the database (issue 45: that read was a seventh of a refresh).
 */
export interface ClientRemovals {
  mark (clientId: string): Promise<void>
  marked (clientId: string): Promise<boolean>
}

/** How long a mark stays: far longer than an instance keeps a client (CLIENT_CACHE_MS), and the client's row is gone long before. */
export const REMOVAL_MARK_MS = 86_400_000

export function createClientRemovals (store: ArtifactStore, prefix: string): ClientRemovals {
  const key = (clientId: string): string => `${prefix}client-removed:${idDigest(clientId)}`
  return {
    async mark (clientId) {
      await store.set(key(clientId), '1', REMOVAL_MARK_MS)
    },
    marked: async (clientId) => await store.get(key(clientId)) !== null
  }
}
