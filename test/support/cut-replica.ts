import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { waitFor } from '../../support/processes.js'
import { StatusError } from '../../src/errors/status.js'
import { fixtureAccounts } from './app.js'

/*
 * A revocation answered `Success` survives the failover of its master even when
 * its replica was cut off as it was written. The same scenario on a Cluster and behind
 * Sentinel: on one master, Logouts with the replica healthy (all `Success`), then the replica
 * cut off (SIGSTOP, its link closed on the master), Logouts, a revoke-all and a disable in
 * that window (each must answer 503, never `Success`), then the master killed and the stale
 * replica promoted. No token whose revocation was acknowledged may authenticate afterwards.
 * A group taken away is under the same rule (api-contract, Groups and access rules): one
 * account's removal from a group with the replica healthy (Success), another under the cut
 * (503, never Success); after the failover its live tokens are still out of the first group.
 */

export interface CutReplicaSetup {
  app: FastifyInstance
  /** Accounts (password = username) whose tokens all live on the master under test: at least 4. */
  usernames: readonly string[]
  /** Cuts the master's replica off: stopped, its link closed on the master. */
  cut (): Promise<void>
  /** Kills the master, wakes the stale replica and has it promoted. */
  failover (): Promise<void>
}

export interface CutReplicaOutcome {
  healthyStatuses: number[]
  cutStatuses: number[]
  /** The Retry-After of each 503 under the cut. */
  retryAfter: Array<string | undefined>
  revokeAll: number
  disable: number
  /** Tokens whose revocation was acknowledged, and those of them that authenticated after the failover. */
  acknowledged: number
  back: number
  /** Milliseconds from the failover's start until the service answered again. */
  recoveredMs: number
  /** Mean milliseconds of a Logout with the replica healthy, and of one under the cut. */
  healthyLogoutMs: number
  cutLogoutMs: number
  /** A Logout on the promoted replica, whose meant replica (the dead master) is gone. */
  afterFailover: number
  /** A group removal with the replica healthy, and one under the cut (HTTP statuses). */
  groupsHealthy: number
  groupsCut: number
  /** The groups Authenticate gives each live token of that account after the failover (undefined: not active). */
  groupsAfter: unknown[]
}

async function login (app: FastifyInstance, username: string): Promise<string> {
  const answer = await app.inject({ method: 'POST', url: '/auth/Login', payload: { username, password: username } })
  if (answer.statusCode !== 200) throw new Error(`Login of ${username} answered ${answer.statusCode}`)
  return answer.json<{ token: string }>().token
}

/** The HTTP status an admin revocation answers: 200 when it resolved, the StatusError's otherwise. */
async function statusOf (work: () => Promise<unknown>): Promise<number> {
  try {
    await work()
    return 200
  } catch (error) {
    if (error instanceof StatusError) return error.httpStatus
    throw error
  }
}

export async function runCutReplica (t: Test, setup: CutReplicaSetup): Promise<CutReplicaOutcome> {
  const { app, usernames } = setup
  const [revoked, disabled, ...loggingOut] = usernames
  if (revoked === undefined || disabled === undefined || loggingOut.length < 2) throw new Error('at least 4 accounts on the master')
  const accounts = fixtureAccounts(app)
  const tokensOf = async (username: string, count: number): Promise<string[]> => {
    const tokens: string[] = []
    for (let i = 0; i < count; i++) tokens.push(await login(app, username))
    return tokens
  }
  const healthy: string[] = []
  const underCut: string[] = []
  for (const username of loggingOut) {
    healthy.push(...await tokensOf(username, 5))
    underCut.push(...await tokensOf(username, 3))
  }
  // The first logging-out account is also in dev and ops; three tokens of it are never logged out.
  const grouped = loggingOut[0] ?? ''
  await accounts.setGroups(grouped, ['dev', 'ops'])
  const groupedTokens = await tokensOf(grouped, 3)
  const revokedTokens = await tokensOf(revoked, 3)
  const disabledTokens = await tokensOf(disabled, 3)
  const acknowledged: string[] = []
  const logout = async (token: string): Promise<{ status: number, retryAfter: string | undefined }> => {
    const answer = await app.inject({ method: 'POST', url: `/auth/Logout/${token}` })
    if (answer.statusCode === 200) acknowledged.push(token)
    const header = answer.headers['retry-after']
    return { status: answer.statusCode, retryAfter: typeof header === 'string' ? header : undefined }
  }

  const healthyStatuses: number[] = []
  let began = performance.now()
  for (const token of healthy) healthyStatuses.push((await logout(token)).status)
  const healthyLogoutMs = (performance.now() - began) / healthy.length
  const groupsHealthy = await statusOf(async () => await accounts.setGroups(grouped, ['dev']))

  await setup.cut()
  const cutStatuses: number[] = []
  const retryAfter: Array<string | undefined> = []
  began = performance.now()
  for (const token of underCut) {
    const { status, retryAfter: after } = await logout(token)
    cutStatuses.push(status)
    if (status === 503) retryAfter.push(after)
  }
  const cutLogoutMs = (performance.now() - began) / underCut.length
  const revokeAll = await statusOf(async () => await accounts.revokeSessions(revoked))
  if (revokeAll === 200) acknowledged.push(...revokedTokens)
  const disable = await statusOf(async () => await accounts.setDisabled(disabled, true))
  if (disable === 200) acknowledged.push(...disabledTokens)
  const groupsCut = await statusOf(async () => await accounts.setGroups(grouped, []))

  const started = performance.now()
  await setup.failover()
  // The service follows the promotion: Authenticate answers something other than 503 again.
  const probe = healthy[0] ?? ''
  await waitFor('the service on the promoted replica', async () =>
    (await app.inject({ url: `/auth/Authenticate/${probe}` })).statusCode !== 503, { timeoutMs: 30_000, everyMs: 100 })
  const recoveredMs = performance.now() - started
  let back = 0
  for (const token of acknowledged) {
    const status = (await app.inject({ url: `/auth/Authenticate/${token}` })).statusCode
    if (status === 200) back++
    else if (status !== 403) t.fail(`Authenticate answered ${status} after the failover`)
  }
  const checked = acknowledged.length
  const groupsAfter: unknown[] = []
  for (const token of groupedTokens) {
    const answer = await app.inject({ url: `/auth/Authenticate/${token}` })
    groupsAfter.push(answer.statusCode === 200 ? answer.json<{ groups?: unknown }>().groups : undefined)
  }
  const afterFailover = (await logout(await login(app, loggingOut[0] ?? ''))).status
  return { healthyStatuses, cutStatuses, retryAfter, revokeAll, disable, acknowledged: checked, back, recoveredMs, healthyLogoutMs, cutLogoutMs, afterFailover, groupsHealthy, groupsCut, groupsAfter }
}

/** The assertions both topologies share. */
export function checkCutReplica (t: Test, outcome: CutReplicaOutcome): void {
  t.ok(outcome.healthyStatuses.length > 0 && outcome.healthyStatuses.every((status) => status === 200), `replica healthy: every Logout answered Success (${outcome.healthyStatuses.join(' ')})`)
  t.ok(outcome.cutStatuses.every((status) => status === 503), `replica cut off: every Logout answered 503, never Success (${outcome.cutStatuses.join(' ')})`)
  t.ok(outcome.retryAfter.length > 0 && outcome.retryAfter.every((value) => value !== undefined && Number(value) >= 1), 'each such 503 carries Retry-After')
  t.equal(outcome.revokeAll, 503, 'a revoke-all under the cut answers 503')
  t.equal(outcome.disable, 503, 'a disable under the cut answers 503')
  t.equal(outcome.back, 0, `none of the ${outcome.acknowledged} tokens whose revocation was acknowledged authenticates after the failover`)
  t.equal(outcome.groupsHealthy, 200, 'a group removal with the replica healthy answers Success')
  t.equal(outcome.groupsCut, 503, 'a group removal under the cut answers 503, never Success')
  t.same(outcome.groupsAfter.map((groups) => Array.isArray(groups) && groups.includes('ops')), outcome.groupsAfter.map(() => false),
    `after the failover no live token of the account is back in the group it was acknowledged out of (${JSON.stringify(outcome.groupsAfter)})`)
  t.ok(outcome.groupsAfter.every((groups) => groups !== undefined), 'its tokens themselves are still active')
  t.comment(`failover: service answering again ${outcome.recoveredMs.toFixed(0)} ms after the master was killed; ${outcome.acknowledged} acknowledged revocations, ${outcome.back} back; ` +
    `Logout ${outcome.healthyLogoutMs.toFixed(1)} ms with the replica healthy, ${outcome.cutLogoutMs.toFixed(1)} ms (503) under the cut; ` +
    `a Logout on the promoted replica, its old master dead: ${outcome.afterFailover}`)
}
