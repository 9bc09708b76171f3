import { isIPv6 } from 'node:net'
import type { FastifyRequest } from 'fastify'
import { tooManyRequests } from '../../errors/status.js'
import type { RequestLimiter } from '../stores/request-limiter.js'

/**
 * Who a per-client limit counts: the client's address as the service trusts it (`request.ip`,
 * which believes X-Forwarded-For only from AUTH_TRUST_PROXY), an IPv4-mapped IPv6 address as its
 * IPv4 address, and any other IPv6 address as its /64: one subscriber gets a /64 or more and may
 * use any address in it, so counting addresses there would count nothing.
 */
export function clientNetwork (ip: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip)
  if (mapped?.[1] !== undefined) return mapped[1]
  if (!isIPv6(ip)) return ip
  const address = (ip.split('%')[0] ?? ip).toLowerCase()
  const groupsOf = (part: string): string[] => part === '' ? [] : part.split(':')
  // A dotted IPv4 tail is two groups.
  const width = (groups: string[]): number => groups.reduce((sum, group) => sum + (group.includes('.') ? 2 : 1), 0)
  const gap = address.indexOf('::')
  let groups: string[]
  if (gap < 0) {
    groups = groupsOf(address)
  } else {
    const head = groupsOf(address.slice(0, gap))
    const tail = groupsOf(address.slice(gap + 2))
    groups = [...head, ...Array<string>(Math.max(0, 8 - width(head) - width(tail))).fill('0'), ...tail]
  }
  return `${groups.slice(0, 4).map((group) => Number.parseInt(group, 16).toString(16)).join(':')}::/64`
}

/**
 * A route hook that counts the request against its client's limit in `scope` and refuses it past
 * the limit: 429 with Retry-After, answered as the route's scope answers errors (the JSON body,
 * or the sign-in page's notice). For any route anyone may call before signing in.
 */
export function limitPerClient (limiter: RequestLimiter, scope: string): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    const verdict = await limiter.hit(scope, clientNetwork(request.ip))
    if (!verdict.allowed) throw tooManyRequests(verdict.retryAfterMs / 1000)
  }
}
