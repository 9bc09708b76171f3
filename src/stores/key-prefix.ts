/**
 * Every key starts with this. The braces are a hash tag: in a Redis Cluster all keys
 * land in one slot, so each Lua script's keys are on one node (the cluster then gives
 * failover, not sharding). On a single Redis they are plain characters.
 *
 * A module of its own, without ioredis: the configuration needs the default, and loading
 * ioredis for it cost every command-line run a tenth of a second of CPU.
 */
export const DEFAULT_KEY_PREFIX = '{ats}:'
