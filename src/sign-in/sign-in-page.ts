import type { FastifyInstance } from 'fastify'
import type { AuthService } from '../core/auth.js'
import { SecondFactorRequired, StatusError } from '../errors/status.js'
import { refuseOtherMethods } from '../http/methods.js'
import { clientOf } from '../core/routes/client-context.js'
import { signInPage, type SignInPrompt } from './pages.js'
import { redirectParameter } from './redirect.js'
import type { AccountPages } from './account-routes.js'
import { doneNotice } from './account-notices.js'
import type { CodeStep } from './code-step.js'
import { field, MESSAGES, noticeFor, type SignInContext } from './page-context.js'

export interface SignInPageDeps {
  auth: Pick<AuthService, 'login'>
  /** Where a right password of an account with a second factor goes next. */
  codeStep: CodeStep
  /** Where a browser already signed in is shown. */
  account: AccountPages
}

/**
 * `prompt=login` in a raw query: an application (the OpenID provider's interaction, for its
 * prompt=login or max_age) wants a sign-in made now. A query that is a gateway's raw `rd=` holds
 * nothing of ours after it (redirectParameter), so no prompt is read there.
 */
export function promptParameter (rawUrl: string): SignInPrompt | undefined {
  const mark = rawUrl.indexOf('?')
  if (mark < 0) return undefined
  const query = rawUrl.slice(mark + 1)
  if (/^rd=(https?:\/\/|\/)/i.test(query)) return undefined
  return query.split('&').includes('prompt=login') ? 'login' : undefined
}

/** The prompt a form carried through its POST. */
export const promptField = (body: unknown): SignInPrompt | undefined => field(body, 'prompt') === 'login' ? 'login' : undefined

/**
 * GET/POST /auth/signin: the username and password form, and its Login. Signed in already, the
 * browser goes straight back where it was going, or sees its account page — unless `prompt=login`
 * asks for a sign-in made now: then the form, whose Login presents the browser's token, so that
 * the token is refreshed and its issue time (what the provider reads as auth_time) is now.
 */
export function registerSignInPage (pages: FastifyInstance, context: SignInContext, { auth, codeStep, account }: SignInPageDeps): void {
  const { page, brandOf, redirectOf, browserToken, signedIn, done } = context
  const forgotPassword = context.forgotPassword

  pages.get('/auth/signin', { schema: { hide: true }, config: { ownQuery: true } }, async (request, reply) => {
    const rd = redirectOf(request, redirectParameter(request.url))
    const prompt = promptParameter(request.url)
    const current = await signedIn(request)
    if (current === undefined) return page(reply, 200, signInPage({ brand: brandOf(request), rd, prompt, forgotPassword }))
    if (prompt === 'login') return page(reply, 200, signInPage({ brand: brandOf(request), rd, prompt, username: current.record.username }))
    // Already signed in: straight back where the person was going, or the account page.
    if (rd !== undefined) return await reply.code(303).header('location', rd).send()
    return await account.view(request, reply, current, doneNotice(request.url))
  })
  refuseOtherMethods(pages, '/auth/signin', ['GET', 'POST'])

  pages.post('/auth/signin', { schema: { hide: true } }, async (request, reply) => {
    const username = field(request.body, 'username')
    const password = field(request.body, 'password')
    const rd = redirectOf(request, field(request.body, 'rd'))
    const prompt = promptField(request.body)
    if (username === undefined || username === '' || password === undefined || password === '') {
      return page(reply, 400, signInPage({ brand: brandOf(request), rd, prompt, username, message: { kind: 'error', text: MESSAGES.missing } }))
    }
    try {
      const issued = await auth.login({ username, password, presentedToken: browserToken(request), client: clientOf(request) })
      codeStep.abandon(request, reply)
      return done(request, reply, issued, rd)
    } catch (error) {
      if (!(error instanceof StatusError)) throw error
      if (error instanceof SecondFactorRequired) return await codeStep.begin(request, reply, error.held, rd)
      reply.headers(error.headers)
      return page(reply, error.httpStatus, signInPage({ brand: brandOf(request), rd, prompt, username, message: noticeFor(error), forgotPassword }))
    }
  })
}
