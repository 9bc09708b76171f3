import { createHash, createSign, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto'
import { isoCBOR } from '@simplewebauthn/server/helpers'

/**
 * A software passkey for the fast suite: a P-256 key that answers the service's WebAuthn
 * options as a platform authenticator would (attestation "none", user present and verified),
 * so the ceremonies run through inject. Chromium's virtual authenticator does the same in the
 * browser test (test/integration/gateways/browser-sign-in.test.ts).
 */

const b64url = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url')
const sha256 = (data: Uint8Array | string): Buffer => createHash('sha256').update(data).digest()

export interface SoftPasskey {
  readonly id: string
  /** The answer to registration options (`navigator.credentials.create`). */
  register (options: { challenge: string, rp: { id: string } }, origin: string): Record<string, unknown>
  /** The answer to sign-in options (`navigator.credentials.get`); `counter` is the signature counter to report. */
  assert (options: { challenge: string, rpId: string }, origin: string, overrides?: { counter?: number, userVerified?: boolean }): Record<string, unknown>
}

export function createSoftPasskey (userHandle = 'user'): SoftPasskey {
  const credentialId = randomBytes(16)
  const { publicKey, privateKey }: { publicKey: KeyObject, privateKey: KeyObject } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const jwk = publicKey.export({ format: 'jwk' })
  const cose = new Map<number, number | Uint8Array>([
    [1, 2], [3, -7], [-1, 1],
    [-2, new Uint8Array(Buffer.from(jwk.x ?? '', 'base64url'))],
    [-3, new Uint8Array(Buffer.from(jwk.y ?? '', 'base64url'))]
  ])
  let counter = 0
  const flags = (uv: boolean, attested: boolean): number => 0x01 | (uv ? 0x04 : 0) | (attested ? 0x40 : 0)
  const counterBytes = (value: number): Buffer => { const bytes = Buffer.alloc(4); bytes.writeUInt32BE(value); return bytes }

  return {
    id: b64url(credentialId),
    register (options, origin) {
      const clientDataJSON = Buffer.from(JSON.stringify({ type: 'webauthn.create', challenge: options.challenge, origin, crossOrigin: false }))
      const idLength = Buffer.alloc(2)
      idLength.writeUInt16BE(credentialId.length)
      const authData = Buffer.concat([sha256(options.rp.id), Buffer.from([flags(true, true)]), counterBytes(counter), Buffer.alloc(16), idLength, credentialId, Buffer.from(isoCBOR.encode(cose))])
      const attestationObject = isoCBOR.encode(new Map<string, unknown>([['fmt', 'none'], ['attStmt', new Map()], ['authData', new Uint8Array(authData)]]) as never)
      return {
        id: b64url(credentialId),
        rawId: b64url(credentialId),
        type: 'public-key',
        response: { clientDataJSON: b64url(clientDataJSON), attestationObject: b64url(attestationObject), transports: ['internal'] },
        clientExtensionResults: {},
        authenticatorAttachment: 'platform'
      }
    },
    assert (options, origin, overrides = {}) {
      counter = overrides.counter ?? counter + 1
      const clientDataJSON = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: options.challenge, origin, crossOrigin: false }))
      const authData = Buffer.concat([sha256(options.rpId), Buffer.from([flags(overrides.userVerified ?? true, false)]), counterBytes(counter)])
      const signature = createSign('sha256').update(Buffer.concat([authData, sha256(clientDataJSON)])).sign(privateKey)
      return {
        id: b64url(credentialId),
        rawId: b64url(credentialId),
        type: 'public-key',
        response: { clientDataJSON: b64url(clientDataJSON), authenticatorData: b64url(authData), signature: b64url(signature), userHandle: b64url(Buffer.from(userHandle)) },
        clientExtensionResults: {},
        authenticatorAttachment: 'platform'
      }
    }
  }
}
