import { idDigest, type ArtifactStore } from './artifact-store.js'

/**
 * Which sign-in token (the browser's AuthToken1, by its hash) each of the provider's sessions stands
 * on: set when an authorization request finds the person signed in (the interaction, and every
 * single sign-on after it), read when a token is given out under that session. The provider's
 * tokens are the sign-in token's children (the token store's issueUnder): its end is theirs.
 *
 * And the other way, which provider sessions stand on a sign-in token: when that token ends, the
 * back-channel logout (backchannel-logout.ts) finds the sessions, their clients and their sids here.
 * A session linked again to a newer sign-in stays in the older token's set: a reader checks
 * `signInOf` before acting on it.
 */
export interface SignInLinks {
  link (sessionUid: string, signInHash: string, ttlMs: number): Promise<void>
  /** The sign-in token's hash, or undefined when none was linked (or the link expired with it). */
  signInOf (sessionUid: string): Promise<string | undefined>
  /** The provider sessions ever linked to the sign-in token (some may stand on a newer one since). */
  sessionsOf (signInHash: string): Promise<string[]>
  /**
   * The same, and the set gone in the same step: of the instances that hear of the token's end,
   * one takes them (and sends the logout tokens), the others find none.
   */
  takeSessions (signInHash: string): Promise<string[]>
}

export function createSignInLinks (store: ArtifactStore, prefix: string): SignInLinks {
  const key = (uid: string): string => `${prefix}signin:${idDigest(uid)}`
  // Named by the token's hash as the token store names it (a digest already, no secret in it).
  const sessionsKey = (signInHash: string): string => `${prefix}signin-sessions:${signInHash}`
  return {
    async link (sessionUid, signInHash, ttlMs) {
      await store.set(key(sessionUid), signInHash, ttlMs)
      // As long as the sign-in token may live: its end is what the set is read for.
      await store.addMember(sessionsKey(signInHash), sessionUid, ttlMs)
    },
    async signInOf (sessionUid) {
      return await store.get(key(sessionUid)) ?? undefined
    },
    sessionsOf: async (signInHash) => await store.members(sessionsKey(signInHash)),
    takeSessions: async (signInHash) => await store.takeMembers(sessionsKey(signInHash))
  }
}
