import t from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { UnavailableError } from '../../src/errors/status.js'
import { createRedisTokenStore, ReplicaAckTimeout } from '../../src/core/stores/redis/token-store.js'
import { keySlot, meantReplicasBySlot } from '../../src/core/stores/redis/replica-acks.js'
import { generateToken, hashToken } from '@auth-token-service/protocol/token'
import { waitFor } from '../../support/processes.js'
import { startThrowawayRedis } from '../../support/redis.js'

/*
 * How many replicas must acknowledge a revocation, the parts that need no cluster: the slot a
 * key lives on (as Redis computes it), the replicas CLUSTER NODES says each master is meant to
 * have (a failed one counts), the setting, and a plain URL to a replicated master, where only
 * the setting can say a replica is meant (nothing lists one that is cut off).
 */

t.test('keySlot is Redis Cluster\'s CRC16 slot, hash tags included', async (t) => {
  // Values of CLUSTER KEYSLOT (redis-server 7.0).
  t.equal(keySlot('123456789'), 12739)
  t.equal(keySlot('foo'), 12182)
  t.equal(keySlot('{user1000}.following'), keySlot('user1000'))
  t.equal(keySlot('foo{}{bar}'), 8363, 'an empty tag: the whole key')
  t.equal(keySlot('foo{{bar}}zap'), 4015, 'the first { to the first } after it')
  t.equal(keySlot('foo{bar}{zap}'), 5061)
  t.equal(keySlot('ünï{cödé}x'), 15029, 'the key\'s UTF-8 bytes')
})

t.test('CLUSTER NODES: every replica of a master counts, a failed or disconnected one too', async (t) => {
  const nodes = [
    'a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460',
    'a2 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922',
    'a3 127.0.0.1:7002@17002 master - 0 0 3 connected 10923-16383',
    'b1 127.0.0.1:7003@17003 slave,fail a1 0 0 1 disconnected',
    'b2 127.0.0.1:7004@17004 slave a2 0 0 2 connected',
    ''
  ].join('\n')
  const bySlot = meantReplicasBySlot(nodes)
  t.same([bySlot[0], bySlot[5460], bySlot[5461], bySlot[10922], bySlot[10923], bySlot[16383]], [1, 1, 1, 1, 0, 0])
})

t.test('AUTH_REDIS_MIN_REPLICA_ACKS: auto unless a number is given', async (t) => {
  t.equal(loadConfig({ NODE_ENV: 'test' }).redisMinReplicaAcks, 'auto')
  t.equal(loadConfig({ NODE_ENV: 'test', AUTH_REDIS_MIN_REPLICA_ACKS: 'auto' }).redisMinReplicaAcks, 'auto')
  t.equal(loadConfig({ NODE_ENV: 'test', AUTH_REDIS_MIN_REPLICA_ACKS: '1' }).redisMinReplicaAcks, 1)
  t.throws(() => loadConfig({ NODE_ENV: 'test', AUTH_REDIS_MIN_REPLICA_ACKS: 'one' }), /AUTH_REDIS_MIN_REPLICA_ACKS/)
})

t.test('a plain URL to a master whose replica is cut off: with the setting, a revocation answers 503', async (t) => {
  const master = await startThrowawayRedis(t)
  const replica = await startThrowawayRedis(t)
  await replica.cli('replicaof', '127.0.0.1', String(master.port))
  const linked = async (): Promise<boolean> => /connected_slaves:1[\s\S]*state=online/.test(await master.cli('info', 'replication'))
  await waitFor('the replica\'s link', linked, { timeoutMs: 20_000 })
  const store = (minReplicaAcks: 0 | 1 | 'auto'): ReturnType<typeof createRedisTokenStore> => {
    const made = createRedisTokenStore({ url: master.url, denyTtlMs: 5000, minReplicaAcks })
    t.teardown(async () => { await made.close() })
    return made
  }
  const required = store(1)
  const auto = store('auto')
  await Promise.all([required.ready(), auto.ready()])
  const issued = async (): Promise<string> => {
    const hash = hashToken(generateToken('7'))
    await required.issue(hash, { accountId: '7', username: 'ann', federated: false, expiresAt: Date.now() + 60_000 }, 60_000)
    return hash
  }
  const healthy = await issued()
  t.ok(await required.terminate(healthy), 'the replica linked: acknowledged')

  const [cut, unguarded] = [await issued(), await issued()]
  replica.signal('SIGSTOP')
  t.teardown(() => { replica.signal('SIGCONT') })
  await master.cli('client', 'kill', 'type', 'replica')
  await waitFor('the cut', async () => (await master.cli('info', 'replication')).includes('connected_slaves:0'))
  const refused = await required.terminate(cut).then(() => undefined, (error: unknown) => error)
  t.ok(refused instanceof UnavailableError && refused.cause instanceof ReplicaAckTimeout, 'the replica cut off: 503, never Success')
  t.equal(refused instanceof UnavailableError ? refused.headers['retry-after'] : undefined, '1', 'with Retry-After')
  t.ok(await auto.terminate(unguarded), 'without the setting a plain URL cannot know of the cut replica (docs/scaling.md: set it)')
  // A group taken away is a revocation of a kind: the same rule (issue 44).
  const grouped = await issued()
  const regroupRefused = await required.regroup('7', [], 1, []).then(() => undefined, (error: unknown) => error)
  t.ok(regroupRefused instanceof UnavailableError && regroupRefused.cause instanceof ReplicaAckTimeout, 'a change of groups with the replica cut off: 503, never Success')
  t.ok(await required.find(grouped), 'the token itself stays')

  replica.signal('SIGCONT')
  await waitFor('the link back', linked, { timeoutMs: 20_000 })
  t.ok(await required.terminate(await issued()), 'the replica back: acknowledged again')
})
