import fastifyJwt from '@fastify/jwt'
import Fastify from 'fastify'
import { randomBytes } from 'node:crypto'
import { listen } from './listen.js'

/**
 * The peer: what a user would pick instead of a token service. A Fastify route that
 * verifies an HS256 JWT with @fastify/jwt (default settings) from `Authorization:
 * Bearer` and answers the claims: no I/O at all, and no way to revoke a token.
 */
interface Claims { sub: string, username: string }

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: Claims
    user: Claims
  }
}

const app = Fastify({ logger: false })
await app.register(fastifyJwt, { secret: randomBytes(32).toString('base64url') })
// Not measured: the bench fetches one token to present.
app.get('/token', async () => ({ token: app.jwt.sign({ sub: '100042', username: 'jane.doe' }, { expiresIn: '12h' }) }))
app.get('/', { onRequest: async (request) => { await request.jwtVerify() } }, async (request) => ({
  status: 0,
  message: 'Success',
  account_id: request.user.sub,
  username: request.user.username
}))
await listen(app)
