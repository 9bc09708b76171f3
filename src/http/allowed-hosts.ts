import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'

/**
 * The internal listener's Host check (DNS rebinding): a page on a domain that
 * its owner points at 127.0.0.1 is same-origin with that domain, so the browser lets it read
 * what the listener answers, but it still sends the domain as Host. Only the names the
 * listener is really reached by are answered: its bound address (every local interface
 * address when bound to a wildcard), `localhost`, the loopback addresses, and the names an
 * operator configures (INTERNAL_HOSTNAMES, e.g. a compose service name).
 */

const WILDCARDS = new Set(['0.0.0.0', '::'])
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1']

/** The host name of a Host header, lower-cased, without its port or an IPv6 literal's brackets; undefined when it is not one. */
export function hostOf (header: string | undefined): string | undefined {
  if (header === undefined || header === '') return undefined
  const value = header.trim().toLowerCase()
  if (value.startsWith('[')) {
    const end = value.indexOf(']')
    if (end < 0) return undefined
    const rest = value.slice(end + 1)
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined
    return value.slice(1, end)
  }
  const colon = value.indexOf(':')
  if (colon >= 0 && !/^:\d{1,5}$/.test(value.slice(colon))) return undefined
  return colon < 0 ? value : value.slice(0, colon)
}

/** Whether a listener bound to this address is reached from this machine only. */
export function loopbackOnly (boundHost: string): boolean {
  const host = boundHost.toLowerCase()
  if (host === 'localhost' || host === '::1') return true
  return isIP(host) === 4 && host.startsWith('127.')
}

function interfaceAddresses (): string[] {
  return Object.values(networkInterfaces()).flatMap((entries) => (entries ?? []).map((entry) => entry.address.toLowerCase()))
}

/**
 * A check of Host names for a listener bound to `boundHost`. On a wildcard binding an address
 * literal is looked up among the interfaces' addresses at each request (an address added
 * later is found too; the internal listener's traffic is light).
 */
export function allowedHosts (boundHost: string, configured: readonly string[]): (header: string | undefined) => boolean {
  const bound = boundHost.toLowerCase()
  const names = new Set([...LOOPBACK_NAMES, ...configured.map((name) => name.toLowerCase())])
  if (!WILDCARDS.has(bound)) names.add(bound)
  return (header) => {
    const host = hostOf(header)
    if (host === undefined) return false
    if (names.has(host)) return true
    return WILDCARDS.has(bound) && isIP(host) !== 0 && interfaceAddresses().includes(host)
  }
}
