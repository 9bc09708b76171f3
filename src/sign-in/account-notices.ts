import type { FastifyReply } from 'fastify'
import { reasons } from '../errors/reasons.js'
import type { StatusError } from '../errors/status.js'
import { tooManyAttempts } from './display.js'
import type { Notice } from './pages.js'

/** What the account page tells the person: after an action done (in the redirect back), or refused. */

/** What a redirect back to the page says: a fixed word in the URL, never text of the request. */
const DONE = {
  'session-ended': 'The session was ended.',
  'sessions-ended': 'Your other sessions were signed out.',
  'password-changed': 'Your password was changed. Your other sessions were signed out.',
  'totp-on': 'Two-step verification is on.',
  'totp-off': 'Two-step verification is off.',
  'key-revoked': 'The API key was revoked.',
  'passkey-removed': 'The passkey was removed.'
} as const
export type Done = keyof typeof DONE

/** The notice a `done` parameter names, or undefined. */
export function doneNotice (rawUrl: string): Notice | undefined {
  const mark = rawUrl.indexOf('?')
  if (mark < 0) return undefined
  const done = new URLSearchParams(rawUrl.slice(mark + 1)).get('done')
  return done !== null && Object.hasOwn(DONE, done) ? { kind: 'info', text: DONE[done as Done] } : undefined
}

/** Post/Redirect/Get: back to the page's section, with the notice of what was done. */
export const back = async (reply: FastifyReply, done: Done, section: string): Promise<FastifyReply> =>
  await reply.code(303).header('location', `/auth/signin?done=${done}#${section}`).send()

export const MESSAGES = {
  wrongPassword: 'That password is not right.',
  wrongPasswordOrCode: 'The password or the code is not right.',
  wrongCode: 'That code is not right. Enter the code the app shows now.',
  passwordsDiffer: 'The two new passwords are not the same.',
  required: 'Fill in every field of the form.',
  federated: 'Your password is kept by your organisation\'s directory: change it there.',
  sessionGone: 'That session had already ended.',
  keyGone: 'That key had already been revoked, or is not yours.',
  totpActive: 'Two-step verification is already on.',
  totpNotActive: 'Two-step verification is not on.',
  notPending: 'Start the set-up again: nothing waits for a code.',
  unavailable: 'That could not be done right now. Try again in a moment.',
  crossSite: 'This request did not come from this site\'s own page: nothing was changed.'
} as const

/** A refusal's 400 detail as a person reads it (the JSON routes' detail names fields). */
function personal (detail: string): string {
  const text = detail
    .replace(/^new_password /, 'The new password ')
    .replace(/^expires_in_days /, 'The number of days ')
    .replace(/^name /, 'The key name ')
    .replace(/ \(AUTH_API_KEYS_PER_ACCOUNT\)$/, '')
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`
}

/** What a refused action tells the person, by the error the operation threw. */
export function noticeFor (error: StatusError, wrong: string = MESSAGES.wrongPassword): Notice {
  const text = error.status === 701
    ? wrong
    : error.status === 429
      ? tooManyAttempts(error.headers['retry-after'])
      : error.status === 503
        ? MESSAGES.unavailable
        : error.status === 403 && error.detail === reasons.crossSiteRequest()
          ? MESSAGES.crossSite
          : error.status === 403 && error.detail === reasons.federatedPassword()
            ? MESSAGES.federated
            : error.status === 409
              ? MESSAGES.totpActive
              : error.detail !== undefined
                ? personal(error.detail)
                : MESSAGES.required
  return { kind: 'error', text }
}
