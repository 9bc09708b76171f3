import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import type { GuardedApp } from '../guard/support.js'

/*
 * A load of Logins, Authenticates and Logouts against the service (inject) and a warm guard,
 * that checks every answer against what it knows of each token:
 *   active (Login answered it, no Logout sent): Authenticate must answer 200, or 503;
 *   ended (a Logout answered 200): Authenticate must answer 403, or 503, never 200;
 *   uncertain (a Logout answered 503: it may or may not have ended it): not checked.
 * Wrong answers are kept as violations; 503s are counted with the time they came.
 */

export interface LoadUser { username: string, password: string }

export interface LoadState {
  active: Set<string>
  /** Token -> when its Logout was answered 200 (performance.now()). */
  ended: Map<string, number>
  uncertain: Set<string>
  violations: string[]
  unavailable: number[]
  counts: { logins: number, authenticates: number, logouts: number, guard: number }
}

export interface Load {
  state: LoadState
  /** Stops the workers and resolves when they are done. */
  stop (): Promise<void>
}

const pick = <T>(values: readonly T[]): T | undefined => values[Math.floor(Math.random() * values.length)]

export function newLoadState (): LoadState {
  return { active: new Set(), ended: new Map(), uncertain: new Set(), violations: [], unavailable: [], counts: { logins: 0, authenticates: 0, logouts: 0, guard: 0 } }
}

export async function login (app: FastifyInstance, user: LoadUser, state: LoadState): Promise<string | undefined> {
  const answer = await app.inject({ method: 'POST', url: '/auth/Login', payload: user })
  state.counts.logins++
  if (answer.statusCode === 200) {
    const token = answer.json<{ token: string }>().token
    state.active.add(token)
    return token
  }
  if (answer.statusCode === 503) state.unavailable.push(performance.now())
  else state.violations.push(`Login answered ${answer.statusCode}`)
  return undefined
}

/** Authenticate on the service: checked against the token's state. */
export async function authenticate (app: FastifyInstance, token: string, state: LoadState, when: string): Promise<number> {
  const wasActive = state.active.has(token)
  const endedAt = state.ended.get(token)
  const status = (await app.inject({ url: `/auth/Authenticate/${token}` })).statusCode
  state.counts.authenticates++
  if (status === 503) state.unavailable.push(performance.now())
  else if (wasActive && state.active.has(token) && status !== 200) state.violations.push(`${when}: Authenticate answered ${status} for an active token`)
  else if (endedAt !== undefined && status !== 403) state.violations.push(`${when}: Authenticate answered ${status} for a token logged out ${(performance.now() - endedAt).toFixed(0)} ms before`)
  return status
}

/** The warm guard: an ended token is checked once its Logout is `settleMs` old (the revocation feed's delivery). */
export async function throughGuard (guard: GuardedApp, token: string, state: LoadState, when: string, settleMs = 1000): Promise<number> {
  const wasActive = state.active.has(token)
  const endedAt = state.ended.get(token)
  const status = await guard.status(token)
  state.counts.guard++
  if (status === 503) state.unavailable.push(performance.now())
  else if (wasActive && state.active.has(token) && status !== 200) state.violations.push(`${when}: the guard answered ${status} for an active token`)
  else if (endedAt !== undefined && performance.now() - endedAt > settleMs && status !== 403) state.violations.push(`${when}: the guard answered ${status} for a token logged out ${(performance.now() - endedAt).toFixed(0)} ms before`)
  return status
}

export async function logout (app: FastifyInstance, token: string, state: LoadState, when: string): Promise<void> {
  state.active.delete(token)
  const status = (await app.inject({ method: 'POST', url: `/auth/Logout/${token}` })).statusCode
  state.counts.logouts++
  if (status === 200) state.ended.set(token, performance.now())
  else if (status === 503) {
    state.unavailable.push(performance.now())
    state.uncertain.add(token)
  } else state.violations.push(`${when}: Logout answered ${status} for an active token`)
}

/** `workers` loops of: a Login now and then, Authenticates of active and ended tokens (service and guard), Logouts. */
export function startLoad (app: FastifyInstance, guard: GuardedApp, users: readonly LoadUser[], state: LoadState, workers = 4): Load {
  let running = true
  const worker = async (): Promise<void> => {
    while (running) {
      const roll = Math.random()
      const active = [...state.active]
      const ended = [...state.ended.keys()]
      if (roll < 0.05 || active.length < 20) {
        const user = pick(users)
        if (user !== undefined) await login(app, user, state)
      } else if (roll < 0.15) {
        const token = pick(active)
        if (token !== undefined) await logout(app, token, state, 'under load')
      } else if (roll < 0.55) {
        const token = pick(active)
        if (token !== undefined) await authenticate(app, token, state, 'under load')
      } else if (roll < 0.75) {
        const token = pick(ended)
        if (token !== undefined) await authenticate(app, token, state, 'under load')
      } else {
        const token = roll < 0.9 ? pick(active) : pick(ended)
        if (token !== undefined) await throughGuard(guard, token, state, 'under load')
      }
      await sleep(1)
    }
  }
  const done = Promise.all(Array.from({ length: workers }, worker))
  return {
    state,
    async stop () {
      running = false
      await done
    }
  }
}

/** The longest run of 503s: from the first to the last of a stretch with no gap over `gapMs`. */
export function longestUnavailableMs (times: readonly number[], gapMs = 1000): number {
  let longest = 0
  let start: number | undefined
  let last: number | undefined
  for (const at of [...times].sort((a, b) => a - b)) {
    if (last === undefined || at - last > gapMs) start = at
    last = at
    longest = Math.max(longest, at - (start ?? at))
  }
  return longest
}
