import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { createRedisTokenStore } from '../src/stores/redis/token-store.js'
import { generateToken, hashToken } from '../src/tokens/token.js'
import { freePort } from '../support/processes.js'
const mode = process.argv[2]
const port = await freePort()
const server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
await sleep(500)
const url = `redis://127.0.0.1:${port}`
const admin = new Redis(url)
const store = createRedisTokenStore({ url, denyTtlMs: 300_000, commandTimeoutMs: 10_000 })
await store.ready()
await store.isDenied('x')
const used = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1])
const before = await used()
const N = 100_000
for (let s = 0; s < N; s += 500) {
  await Promise.all(Array.from({ length: 500 }, async (_, i) => {
    const id = String(100000 + Math.floor((s + i) / 2))
    const token = mode === 'v1' ? generateToken(id).slice(3) : generateToken(id)
    await store.issue(hashToken(token), { accountId: id, username: 'anna.meier', federated: false, expiresAt: Date.now() + 43_200_000 }, 43_200_000)
  }))
}
const after = await used()
const stats = await admin.call('MEMORY', 'STATS') as Array<string | number>
const get = (k: string) => stats[stats.indexOf(k) + 1]
console.log(mode, ((after - before) / N).toFixed(1), 'B/token', 'keys', await admin.dbsize(), 'ht.main', get('overhead.hashtable.main'), 'ht.exp', get('overhead.hashtable.expires'), 'dataset', get('dataset.bytes'))
const k = (await admin.scan('0', 'MATCH', '*t:*', 'COUNT', 100))[1][0] ?? ''
const a = (await admin.scan('0', 'MATCH', '*a:*', 'COUNT', 100))[1][0] ?? ''
console.log(k, await admin.memory('USAGE', k), a, await admin.memory('USAGE', a), await admin.object('ENCODING', a))
await store.close(); admin.disconnect(); server.kill()
process.exit(0)
