import type { AddressInfo } from 'node:net'

/** Where this machine reaches a listener: a wildcard address is reached on the loopback. */
export function localUrl (address: string | AddressInfo | null): string | null {
  if (address === null || typeof address === 'string') return null
  const host = address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '::1' : address.address
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`
}
