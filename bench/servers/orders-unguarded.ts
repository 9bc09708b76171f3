import Fastify from 'fastify'
import { listen, requiredEnv } from './listen.js'

/**
 * The ceiling of the guarded route: the example orders-service's `GET /orders` without its
 * guard. The same Fastify scope, response schema and async handler as
 * examples/orders-service/src/app.ts, answering for the one account the bench's token
 * belongs to (BENCH_ACCOUNT_ID, BENCH_USERNAME), as the guarded route answers once the guard
 * has let the token through. The bench compares the two answers byte for byte at start, so a
 * change to the example's route shows up there instead of in a silently wrong ratio.
 */
const OrderSchema = {
  type: 'object',
  required: ['id', 'item', 'quantity', 'createdAt'],
  properties: {
    id: { type: 'integer' },
    item: { type: 'string' },
    quantity: { type: 'integer' },
    createdAt: { type: 'string' }
  }
} as const

const OrderListSchema = {
  type: 'object',
  required: ['account', 'orders'],
  properties: {
    account: {
      type: 'object',
      required: ['id', 'username'],
      properties: { id: { type: 'string' }, username: { type: 'string' } }
    },
    orders: { type: 'array', items: OrderSchema }
  }
} as const

interface Order { id: number, item: string, quantity: number, createdAt: string }

const accountId = requiredEnv('BENCH_ACCOUNT_ID')
const username = requiredEnv('BENCH_USERNAME')
const ordersByAccount = new Map<string, Order[]>()

const app = Fastify({ logger: false })
app.get('/health', async () => ({ status: 'ok' }))
await app.register(async (orders) => {
  orders.get('/orders', { schema: { response: { 200: OrderListSchema } } }, async () => {
    return { account: { id: accountId, username }, orders: ordersByAccount.get(accountId) ?? [] }
  })
})
await listen(app)
