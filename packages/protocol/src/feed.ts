/**
 * How a revocation feed proves it is live. A half-open connection (a frozen
 * proxy, a dropped NAT entry) looks exactly like a quiet one, so silence proves nothing: a
 * cache of positive answers may answer only while a heartbeat has come back recently.
 *
 * - Redis (direct mode, and the service's own feed): a PING on the subscribed connection every
 *   FEED_HEARTBEAT_MS. Its PONG comes after every message published before Redis read the
 *   PING (one connection, one order), so it proves the feed current as of the PING's sending,
 *   for FEED_PROOF_MS from then. On a Redis Cluster the messages of other masters come over the
 *   cluster bus, which a PONG says nothing of: a nonce published on every master, all back on
 *   the subscribed connection, is the proof there (cluster-feed.ts).
 * - HTTP (the SSE stream): the service sends a `heartbeat` event every FEED_HEARTBEAT_MS
 *   while its own feed is proven, carrying how much longer that proof holds; the guard trusts
 *   it no longer than that, nor than FEED_PROOF_MS, from when it arrives.
 *
 * So a revocation is honoured by every cache within FEED_PROOF_MS of it (plus the stream's
 * transit time in HTTP mode), whatever happens to the network.
 */
export const FEED_HEARTBEAT_MS = 200
export const FEED_PROOF_MS = 800
/** A PING unanswered this long: the connection is cut, and made again. */
export const FEED_STALL_MS = 2000

/**
 * Follows revocations as they happen, for caches of positive answers. Between
 * `interrupted` and the next `live`, messages may have been missed: a cache must
 * not be trusted then, and is dropped.
 */
export interface RevocationWatcher {
  revoked (tokenHashes: readonly string[]): void
  /**
   * The feed is connected and proven current: every revocation published before the proof
   * was taken has been delivered. `validForMs`: how long that proof holds unless another
   * renews it (heartbeats: FEED_HEARTBEAT_MS); undefined, until `interrupted`.
   */
  live (validForMs?: number): void
  /** The feed was cut: revocations may be missed until the next `live`. */
  interrupted (): void
}
