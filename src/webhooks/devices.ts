import { isIPv4, isIPv6 } from 'node:net'
import type { Queryable } from '../db/database.js'
import type { LoginDevices } from '../core/ports.js'

/**
 * login.new_device: a client is the pair (user-agent family, network: /24 for IPv4, /64 for
 * IPv6), so a browser update or a new address from the same provider block is not a new device.
 * Each account keeps the pairs it logged in from with when it last did (login_devices), pruned
 * past 90 days: a small per-account record, never a scan of the audit trail.
 */

export const DEVICE_MEMORY_DAYS = 90

export interface Device {
  userAgentFamily: string
  network: string
}

/** Browser families first by the token that only they send (Edge and Opera also say Chrome and Safari). */
const FAMILIES: ReadonlyArray<[RegExp, string]> = [
  [/\bEdg(e|A|iOS)?\//, 'Edge'],
  [/\b(OPR|Opera)\//, 'Opera'],
  [/\bSamsungBrowser\//, 'Samsung Internet'],
  [/\b(Firefox|FxiOS)\//, 'Firefox'],
  [/\b(Chrome|CriOS|Chromium)\//, 'Chrome'],
  [/\bVersion\/[\d.]+.*\bSafari\//, 'Safari']
]

/** A family name: a known browser, else the first product token (`curl`, `python-requests`), else `unknown`. */
export function userAgentFamily (userAgent: string | undefined): string {
  if (userAgent === undefined || userAgent.trim() === '') return 'unknown'
  for (const [pattern, family] of FAMILIES) if (pattern.test(userAgent)) return family
  const product = /^[A-Za-z][A-Za-z0-9._-]{0,31}/.exec(userAgent.trim())
  return product === null ? 'other' : product[0]
}

/** The eight groups of an IPv6 address, or undefined for something that is not one. */
function ipv6Groups (address: string): number[] | undefined {
  const [head = '', tail, ...more] = address.split('::')
  if (more.length > 0) return undefined
  const parse = (part: string): number[] => part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16))
  const front = parse(head)
  const back = tail === undefined ? [] : parse(tail)
  const missing = 8 - front.length - back.length
  if (tail === undefined ? missing !== 0 : missing < 0) return undefined
  return [...front, ...new Array<number>(tail === undefined ? 0 : missing).fill(0), ...back]
}

/** The client's network: a.b.c.0/24, or the first four groups of an IPv6 address and /64. */
export function clientNetwork (ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  const v4 = mapped?.[1] ?? ip
  if (isIPv4(v4)) return `${v4.split('.').slice(0, 3).join('.')}.0/24`
  // An embedded dotted quad (::ffff:0:1.2.3.4 and the like): its groups are not in the /64 we keep.
  const plain = ip.split('%')[0] ?? ip
  if (isIPv6(plain) && !plain.includes('.')) {
    const groups = ipv6Groups(plain)
    if (groups !== undefined) return `${groups.slice(0, 4).map((group) => group.toString(16)).join(':')}::/64`
  }
  return ip
}

export function deviceOf (ip: string, userAgent: string | undefined): Device {
  return { userAgentFamily: userAgentFamily(userAgent), network: clientNetwork(ip) }
}

export interface DeviceRecord {
  /**
   * Records that the account logged in from this device now. True when the account had not
   * used it in the last 90 days while it had used another: an account's very first recorded
   * Login is not a new device (there is nothing to compare it with, as Keycloak's alert skips it).
   */
  seen (accountId: string, device: Device): Promise<boolean>
}

export function createSqlDeviceRecord (db: Queryable): DeviceRecord {
  return {
    async seen (accountId, device) {
      const key = `${device.userAgentFamily} ${device.network}`
      // One statement: the snapshot the CTEs read is the one before this Login's row was written.
      const { rows } = await db.query<{ known: boolean, recent: boolean }>(
        `WITH window_start AS (SELECT now() - make_interval(days => $3) AS at),
              pruned AS (DELETE FROM login_devices WHERE account_id = $1 AND device <> $2 AND last_seen < (SELECT at FROM window_start)),
              upserted AS (INSERT INTO login_devices (account_id, device, last_seen) VALUES ($1, $2, now())
                           ON CONFLICT (account_id, device) DO UPDATE SET last_seen = EXCLUDED.last_seen
                           -- A day's precision is ample for 90 days: a repeat Login the same day writes nothing.
                           WHERE login_devices.last_seen < EXCLUDED.last_seen - interval '1 day')
         SELECT EXISTS (SELECT 1 FROM login_devices WHERE account_id = $1 AND last_seen >= (SELECT at FROM window_start)) AS known,
                EXISTS (SELECT 1 FROM login_devices WHERE account_id = $1 AND device = $2 AND last_seen >= (SELECT at FROM window_start)) AS recent`,
        [accountId, key, DEVICE_MEMORY_DAYS])
      const row = rows[0]
      return row !== undefined && row.known && !row.recent
    }
  }
}

/**
 * The record as Login asks it (core's LoginDevices port): the client's device worked out here,
 * and returned when it is new to the account.
 */
export function loginDevices (record: DeviceRecord): LoginDevices {
  return {
    async seen (accountId, ip, userAgent) {
      const device = deviceOf(ip, userAgent)
      return await record.seen(accountId, device) ? device : undefined
    }
  }
}
