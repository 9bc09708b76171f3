import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify'
// A service outside this repository writes `from 'auth-token-service/guard'` (the package's
// subpath export). Inside the repository the relative path keeps this example type-checked
// against the source by `tsc --noEmit`, which CI runs before anything is built into dist/.
import { authTokenGuard, redactUrl, type AuthInfo, type AuthTokenGuardOptions } from '@auth-token-service/guard'

/**
 * orders-service: a small service of the internal network whose routes require a token
 * of the authentication token service. One `register` of the guard protects the `/orders`
 * scope; `/health` stays open. Handlers read who is asking from `request.auth`.
 */

export interface OrdersAppOptions {
  /** How the guard verifies tokens: `{ redisUrl }` (direct) or `{ authenticateUrl }` (HTTP), plus an optional cache. */
  guard: AuthTokenGuardOptions
  logger?: FastifyServerOptions['logger']
}

export interface Order {
  id: number
  item: string
  quantity: number
  createdAt: string
}

const OrderBodySchema = {
  type: 'object',
  required: ['item', 'quantity'],
  properties: {
    item: { type: 'string', minLength: 1, maxLength: 200 },
    quantity: { type: 'integer', minimum: 1, maximum: 1000 }
  }
} as const

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

/** The guard guarantees `request.auth` inside its scope; outside it, using it is a programming error. */
function caller (request: FastifyRequest): AuthInfo {
  if (request.auth === null) throw new Error('this route is not behind the auth-token guard')
  return request.auth
}

export async function buildOrdersApp (options: OrdersAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? {
      // Tokens may come in the query string: never log them.
      serializers: { req: (request) => ({ method: request.method, url: redactUrl(request.url) }) }
    }
  })
  // Per account; a real service keeps these in its own database.
  const ordersByAccount = new Map<string, Order[]>()
  let nextId = 1

  app.get('/health', async () => ({ status: 'ok' }))

  await app.register(async (orders) => {
    await orders.register(authTokenGuard, options.guard)

    // A response schema: Fastify serializes the answer with a compiled serializer instead of
    // JSON.stringify, and no field the schema does not name can leak into the answer.
    orders.get('/orders', { schema: { response: { 200: OrderListSchema } } }, async (request) => {
      const { accountId, username } = caller(request)
      return { account: { id: accountId, username }, orders: ordersByAccount.get(accountId) ?? [] }
    })

    orders.post<{ Body: { item: string, quantity: number } }>('/orders', { schema: { body: OrderBodySchema } }, async (request, reply) => {
      const { accountId } = caller(request)
      const order: Order = { id: nextId++, item: request.body.item, quantity: request.body.quantity, createdAt: new Date().toISOString() }
      const list = ordersByAccount.get(accountId) ?? []
      list.push(order)
      ordersByAccount.set(accountId, list)
      return await reply.code(201).send(order)
    })

    orders.get('/orders/session', async (request) => {
      const { username, federated, expiresAt } = caller(request)
      return { username, federated, tokenExpiresAt: expiresAt.toISOString() }
    })
  })

  return app
}
