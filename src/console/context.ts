import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AccountAdmin, AdminActor } from '../core/accounts.js'
import type { ClientContext } from '../core/auth.js'
import { StatusError } from '../errors/status.js'
import { html, type Markup, type Notice } from '../sign-in/index.js'
import { consolePage, CONSOLE_PATH, plainPage, type Section } from './layout.js'
import { confirmBody, CONFIRMED, type Confirmation } from './confirm-page.js'

/**
 * What every console route shares: the signed-in admin of the request, the account
 * administration acting as that person (every change audited with `actor`), the pages' answer,
 * and the confirm step of the destructive actions.
 */

/** How the audit trail's `credential` names the console (the `actor` names the person). */
export const CONSOLE_CREDENTIAL = 'console'

export interface Admin {
  username: string
  accountId: string
}

export interface ConsoleKit {
  /** The signed-in admin (the gate let no other request through). */
  admin (request: FastifyRequest): Admin
  /** Who acts, for the audit trail: the request's client, the console, the person. */
  actorOf (request: FastifyRequest): AdminActor & { clientIp: string }
  /** The same, as the sessions' ClientContext. */
  clientOf (request: FastifyRequest): ClientContext
  accounts (request: FastifyRequest): AccountAdmin
  /** A console page with the pages' headers. */
  show (request: FastifyRequest, reply: FastifyReply, page: { section: Section, title: string, body: Markup, message?: Notice | undefined, status?: number }): FastifyReply
  /** The brand the pages show. */
  brandOf (request: FastifyRequest): string
  /** A page of its own, outside the console frame (refusals before the gate). */
  plain (reply: FastifyReply, status: number, brand: string, title: string, text: string): FastifyReply
  /**
   * GET `path`: the confirm page; POST `path`: the action, when the form says confirm=yes (else
   * the confirm page again: nothing is done without it).
   */
  destructive (path: string, section: Section, describe: (request: FastifyRequest) => Promise<Confirmation>, perform: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>): void
}

/** A form's field, when it is text. */
export function field (body: unknown, name: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const value = (body as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

/** Post/Redirect/Get: back to a page with the word of what was done (a fixed word, never text of the request). */
export const back = async (reply: FastifyReply, location: string, done: string): Promise<FastifyReply> =>
  await reply.code(303).header('location', `${location}${location.includes('?') ? '&' : '?'}done=${done}`).send()

/** What a refused step tells the person: never more than the status and its safe detail. */
export function noticeOf (error: StatusError): Notice {
  const detail = typeof error.detail === 'string' ? error.detail : undefined
  switch (error.httpStatus) {
    case 400: return { kind: 'error', text: detail === undefined ? 'The form is not complete.' : `Not done: ${detail}.` }
    case 403: return { kind: 'error', text: 'This form did not come from the console\'s own page. Nothing was changed.' }
    case 404: return { kind: 'error', text: detail === undefined ? 'There is no such account.' : `Not found: ${detail}.` }
    case 409: return { kind: 'error', text: error.message === 'Username Taken' ? 'That username is taken.' : `Not done: ${detail ?? error.message}.` }
    case 429: return { kind: 'error', text: 'Too many requests. Try again in a minute.' }
    case 503: return { kind: 'error', text: 'A backend is unavailable right now. Nothing was changed; try again in a moment.' }
    default: return { kind: 'error', text: 'That did not work.' }
  }
}

export interface KitDeps {
  admins: WeakMap<FastifyRequest, Admin>
  accountsFor: (actor: AdminActor) => AccountAdmin
  headers: Readonly<Record<string, string>>
  brandOf: (request: FastifyRequest) => string
  oidc: boolean
  register: {
    get: (path: string, handler: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>) => void
    post: (path: string, handler: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>) => void
  }
}

export function createKit ({ admins, accountsFor, headers, brandOf, oidc, register }: KitDeps): ConsoleKit {
  const admin = (request: FastifyRequest): Admin => {
    const found = admins.get(request)
    // The gate (a preHandler of every console route) lets no request through without one.
    if (found === undefined) throw new Error('console request without a signed-in admin')
    return found
  }
  const actorOf = (request: FastifyRequest): AdminActor & { clientIp: string } =>
    ({ clientIp: request.ip, userAgent: request.headers['user-agent'], credential: CONSOLE_CREDENTIAL, actor: admin(request).username })
  const show: ConsoleKit['show'] = (request, reply, page) => reply.code(page.status ?? 200).headers(headers).send(consolePage({
    title: page.title,
    brand: brandOf(request),
    username: admin(request).username,
    section: page.section,
    oidc,
    message: page.message
  }, page.body))
  return {
    admin,
    actorOf,
    clientOf: (request) => {
      const actor = actorOf(request)
      return { ip: actor.clientIp, userAgent: actor.userAgent, credential: actor.credential, actor: actor.actor }
    },
    accounts: (request) => accountsFor(actorOf(request)),
    show,
    brandOf,
    plain: (reply, status, brand, title, text) => reply.code(status).headers(headers).send(plainPage(brand, title, text,
      html`<p class="aside"><a href="${CONSOLE_PATH}">Admin console</a> · <a href="/auth/signin">Your account</a></p>`)),
    destructive (path, section, describe, perform) {
      const ask = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
        const confirmation = await describe(request)
        return show(request, reply, { section, title: 'Confirm', body: confirmBody(confirmation) })
      }
      register.get(path, ask)
      register.post(path, async (request, reply) => field(request.body, 'confirm') === CONFIRMED ? await perform(request, reply) : await ask(request, reply))
    }
  }
}
