import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ApiKeys } from '../api-keys/index.js'
import type { Sessions } from '../sessions/index.js'
import { normalizeUsername } from '../core/credentials.js'
import { reasons } from '../errors/reasons.js'
import { badRequest, StatusError } from '../errors/status.js'
import type { Notice } from '../sign-in/index.js'
import { accountBody, accountListBody, type AccountDraft } from './account-pages.js'
import { back, field, noticeOf, type ConsoleKit } from './context.js'
import { accountPath, CONSOLE_PATH } from './layout.js'

/**
 * The accounts' pages and actions: each action the operation the admin API and the command line
 * call (AccountAdmin, Sessions, ApiKeys), acting as the signed-in admin.
 */

export const ACCOUNTS_PAGE = 20
const KEYS_SHOWN = 50

const DONE: Readonly<Record<string, string>> = {
  created: 'The account was created.',
  invited: 'The account was created, and an invitation to set its first password is on its way to its email address.',
  'email-set': 'The email address was saved.',
  'email-removed': 'The email address was removed.',
  disabled: 'The account was disabled; its sessions and API keys ended.',
  enabled: 'The account was enabled.',
  unlocked: 'The account was unlocked.',
  'totp-reset': 'The second factor was removed. The account signs in with its password alone until it sets one up again.',
  groups: 'The groups were saved.',
  'session-ended': 'The session was ended.',
  'all-ended': 'Every session and API key of the account ended.',
  'key-revoked': 'The API key was revoked.'
}

/** The notice a `done` word names, or undefined. */
export function doneNotice (query: unknown, words: Readonly<Record<string, string>> = DONE): Notice | undefined {
  const done = field(query, 'done')
  return done !== undefined && Object.hasOwn(words, done) ? { kind: 'info', text: words[done] ?? '' } : undefined
}

export interface AccountRouteDeps {
  sessions: Sessions
  apiKeys: ApiKeys
  /** Mail is on (AUTH_SMTP_URL): accounts may be invited by email. */
  mailOn: boolean
}

const usernameOf = (request: FastifyRequest): string => (request.params as { username: string }).username
const paramOf = (request: FastifyRequest, name: string): string => (request.params as Record<string, string>)[name] ?? ''

type Register = (path: string, handler: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>) => void

/** The accounts' list: find by prefix, and create (with a first password, or an invitation by email while mail is on). */
function registerAccountList ({ show, accounts }: ConsoleKit, get: Register, post: Register, mailOn: boolean): void {
  async function listPage (request: FastifyRequest, reply: FastifyReply, message?: Notice, status?: number, draft?: AccountDraft): Promise<FastifyReply> {
    const raw = field(request.query, 'q')?.trim() ?? ''
    // The prefix in the canonical form usernames are kept in (an empty one: every account).
    const prefix = raw === '' ? '' : normalizeUsername(raw)
    const after = field(request.query, 'after')
    const { accounts: found, next } = await accounts(request).page(after === '' ? undefined : after, ACCOUNTS_PAGE, prefix)
    const query = next === undefined ? undefined : new URLSearchParams({ q: raw, after: next }).toString()
    return show(request, reply, { section: 'accounts', title: 'Accounts', body: accountListBody({ prefix: raw, accounts: found, next: query, draft, mailOn }), message: message ?? doneNotice(request.query), status })
  }

  get(`${CONSOLE_PATH}/accounts`, async (request, reply) => await listPage(request, reply))

  post(`${CONSOLE_PATH}/accounts`, async (request, reply) => {
    const username = field(request.body, 'username')?.trim() ?? ''
    const kind = field(request.body, 'kind') === 'service' ? 'service' : 'person'
    const password = field(request.body, 'password') ?? ''
    const email = field(request.body, 'email')?.trim() ?? ''
    const invite = field(request.body, 'invite') === 'yes'
    const admin = accounts(request)
    try {
      if (username === '') throw badRequest(reasons.required('username'))
      // The admin API's POST /admin/users: an invitation (a person's account, an address, no password; 400 while mail is off), or an account and its address.
      const account = await admin.create({ username, kind, password: password === '' ? undefined : password, email: email === '' ? undefined : email, invite })
      if (invite) return await back(reply, accountPath(account.username), 'invited')
      return await back(reply, accountPath(account.username), 'created')
    } catch (error) {
      if (!(error instanceof StatusError) || error.httpStatus >= 500) throw error
      return await listPage(request, reply, noticeOf(error), error.httpStatus, { username, kind, email, invite })
    }
  })
}

export function registerAccountRoutes (kit: ConsoleKit, get: Register, post: Register, { sessions, apiKeys, mailOn }: AccountRouteDeps): void {
  const { show, accounts } = kit
  registerAccountList(kit, get, post, mailOn)

  /** `email`: the address field's value after a refusal (else the account's own). */
  async function accountPage (request: FastifyRequest, reply: FastifyReply, message?: Notice, status?: number, email?: string): Promise<FastifyReply> {
    const account = await accounts(request).show(usernameOf(request))
    const [live, keys] = await Promise.all([sessions.list(account.id), apiKeys.page(account.id, undefined, KEYS_SHOWN)])
    return show(request, reply, {
      section: 'accounts',
      title: account.username,
      body: accountBody({
        account,
        sessions: live,
        keys: keys.keys.map((key) => ({ id: key.id, name: key.name, created: key.createdAt, expires: key.expiresAt, lastUsed: key.lastUsedAt })),
        moreKeys: keys.next !== undefined,
        email
      }),
      message: message ?? doneNotice(request.query),
      status
    })
  }

  get(`${CONSOLE_PATH}/accounts/:username`, async (request, reply) => await accountPage(request, reply))

  /** A change that ends nothing: done at once, then back to the account's page with its word. */
  const change = (action: string, perform: (request: FastifyRequest) => Promise<string>): void => {
    post(`${CONSOLE_PATH}/accounts/:username/${action}`, async (request, reply) => {
      try {
        const done = await perform(request)
        return await back(reply, accountPath(usernameOf(request)), done)
      } catch (error) {
        if (!(error instanceof StatusError) || error.httpStatus >= 500 || error.httpStatus === 404) throw error
        return await accountPage(request, reply, noticeOf(error), error.httpStatus)
      }
    })
  }
  change('enable', async (request) => { await accounts(request).setDisabled(usernameOf(request), false); return 'enabled' })
  change('unlock', async (request) => { await accounts(request).unlock(usernameOf(request)); return 'unlocked' })
  change('groups', async (request) => {
    const groups = (field(request.body, 'groups') ?? '').split(/[\s,]+/).filter((name) => name !== '')
    await accounts(request).setGroups(usernameOf(request), groups)
    return 'groups'
  })

  // An empty field removes the address; a bad one is the page again with why (the operation's 400), nothing changed.
  post(`${CONSOLE_PATH}/accounts/:username/email`, async (request, reply) => {
    const typed = field(request.body, 'email')?.trim() ?? ''
    try {
      const account = await accounts(request).setEmail(usernameOf(request), typed === '' ? null : typed)
      return await back(reply, accountPath(account.username), account.email === null ? 'email-removed' : 'email-set')
    } catch (error) {
      if (!(error instanceof StatusError) || error.httpStatus >= 500 || error.httpStatus === 404) throw error
      return await accountPage(request, reply, noticeOf(error), error.httpStatus, typed)
    }
  })

  const known = async (request: FastifyRequest): Promise<string> => (await accounts(request).show(usernameOf(request))).username

  kit.destructive(`${CONSOLE_PATH}/accounts/:username/disable`, 'accounts', async (request) => {
    const username = await known(request)
    return {
      question: `Disable ${username}?`,
      consequence: 'The account can no longer sign in, and every session and API key it holds ends at once. Enabling it again does not bring them back.',
      action: `${accountPath(username)}/disable`,
      button: 'Disable the account',
      cancel: accountPath(username)
    }
  }, async (request, reply) => {
    await accounts(request).setDisabled(usernameOf(request), true)
    return await back(reply, accountPath(usernameOf(request)), 'disabled')
  })

  kit.destructive(`${CONSOLE_PATH}/accounts/:username/reset-totp`, 'accounts', async (request) => {
    const username = await known(request)
    return {
      question: `Reset the second factor of ${username}?`,
      consequence: 'The authenticator app and the recovery codes stop working; the account signs in with its password alone until it sets up a second factor again.',
      action: `${accountPath(username)}/reset-totp`,
      button: 'Reset the second factor',
      cancel: accountPath(username)
    }
  }, async (request, reply) => {
    await accounts(request).resetSecondFactor(usernameOf(request))
    return await back(reply, accountPath(usernameOf(request)), 'totp-reset')
  })

  kit.destructive(`${CONSOLE_PATH}/accounts/:username/revoke-all`, 'accounts', async (request) => {
    const username = await known(request)
    return {
      question: `Sign ${username} out everywhere?`,
      consequence: 'Every session and every API key of the account ends at once, and a sign-in under way gets no token. The account itself stays enabled.',
      action: `${accountPath(username)}/revoke-all`,
      button: 'End every session and key',
      cancel: accountPath(username)
    }
  }, async (request, reply) => {
    await accounts(request).revokeSessions(usernameOf(request))
    return await back(reply, accountPath(usernameOf(request)), 'all-ended')
  })

  const noSuchSession = (): StatusError => new StatusError(404, 'Not Found', 404, {}, { detail: reasons.noSuchSession() })

  kit.destructive(`${CONSOLE_PATH}/accounts/:username/sessions/:id/end`, 'accounts', async (request) => {
    const account = await accounts(request).show(usernameOf(request))
    const session = (await sessions.list(account.id)).find((candidate) => candidate.id === paramOf(request, 'id'))
    if (session === undefined) throw noSuchSession()
    return {
      question: `End this session of ${account.username}?`,
      consequence: `The session from ${session.ip} stops working at once: its token is refused everywhere, and the person signs in again.`,
      action: `${accountPath(account.username)}/sessions/${session.id}/end`,
      button: 'End the session',
      cancel: accountPath(account.username)
    }
  }, async (request, reply) => {
    const account = await accounts(request).show(usernameOf(request))
    if (!await sessions.end(account.id, paramOf(request, 'id'), kit.clientOf(request), CONSOLE_ACTOR)) throw noSuchSession()
    return await back(reply, accountPath(account.username), 'session-ended')
  })

  kit.destructive(`${CONSOLE_PATH}/accounts/:username/keys/:id/revoke`, 'accounts', async (request) => {
    const account = await accounts(request).show(usernameOf(request))
    const key = (await apiKeys.page(account.id, undefined, KEYS_SHOWN)).keys.find((candidate) => candidate.id === paramOf(request, 'id'))
    return {
      question: `Revoke the API key ${key?.name ?? paramOf(request, 'id')} of ${account.username}?`,
      consequence: 'Programs using the key are refused at once, everywhere. A revoked key cannot be brought back.',
      action: `${accountPath(account.username)}/keys/${encodeURIComponent(paramOf(request, 'id'))}/revoke`,
      button: 'Revoke the key',
      cancel: accountPath(account.username)
    }
  }, async (request, reply) => {
    const account = await accounts(request).show(usernameOf(request))
    await apiKeys.revoke(paramOf(request, 'id'), kit.actorOf(request), account.id)
    return await back(reply, accountPath(account.username), 'key-revoked')
  })
}

/** How a session's audit outcome names the console (`terminated-by-console`); the `actor` names the person. */
export const CONSOLE_ACTOR = 'console'
