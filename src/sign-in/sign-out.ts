import type { FastifyInstance } from 'fastify'
import type { AuthService } from '../core/auth.js'
import { StatusError } from '../errors/status.js'
import { refuseOtherMethods } from '../http/methods.js'
import { clientOf } from '../core/routes/client-context.js'
import { signOutPage } from './pages.js'
import { redirectParameter } from './redirect.js'
import { field, type SignInContext } from './page-context.js'
import { TOKEN_COOKIE } from '@auth-token-service/protocol/token'

/** GET /auth/signout asks; POST /auth/signout is the Logout of the browser's token, and its cookie goes. */
export function registerSignOut (pages: FastifyInstance, context: SignInContext, auth: Pick<AuthService, 'logout'>): void {
  const { page, brandOf, redirectOf, browserToken, signedIn } = context

  pages.get('/auth/signout', { schema: { hide: true }, config: { ownQuery: true } }, async (request, reply) => {
    const current = await signedIn(request)
    return page(reply, 200, signOutPage({ brand: brandOf(request), username: current?.record.username, rd: redirectOf(request, redirectParameter(request.url)) }))
  })

  pages.post('/auth/signout', { schema: { hide: true } }, async (request, reply) => {
    const token = browserToken(request)
    if (token !== undefined) {
      // Ended already (or never ours): the cookie goes all the same.
      await auth.logout(token, clientOf(request)).catch((error: unknown) => {
        if (!(error instanceof StatusError) || error.status !== 403) throw error
      })
    }
    reply.clearCookie(TOKEN_COOKIE, context.cookie)
    return await reply.code(303).header('location', redirectOf(request, field(request.body, 'rd')) ?? '/auth/signin').send()
  })
  refuseOtherMethods(pages, '/auth/signout', ['GET', 'POST'])
}
