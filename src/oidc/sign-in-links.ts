import { idDigest, type ArtifactStore } from './artifact-store.js'

/**
 * Which sign-in token (the browser's AuthToken1, by its hash) each of the provider's sessions stands
 * on: set when an authorization request finds the person signed in (the interaction, and every
 * single sign-on after it), read when a token is given out under that session. The provider's
 * tokens are the sign-in token's children (the token store's issueUnder): its end is theirs.
 */
export interface SignInLinks {
  link (sessionUid: string, signInHash: string, ttlMs: number): Promise<void>
  /** The sign-in token's hash, or undefined when none was linked (or the link expired with it). */
  signInOf (sessionUid: string): Promise<string | undefined>
}

export function createSignInLinks (store: ArtifactStore, prefix: string): SignInLinks {
  const key = (uid: string): string => `${prefix}signin:${idDigest(uid)}`
  return {
    async link (sessionUid, signInHash, ttlMs) {
      await store.set(key(sessionUid), signInHash, ttlMs)
    },
    async signInOf (sessionUid) {
      return await store.get(key(sessionUid)) ?? undefined
    }
  }
}
