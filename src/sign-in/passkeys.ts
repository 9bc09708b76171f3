import { randomBytes } from 'node:crypto'
import type {
  AuthenticationResponseJSON,
  AuthenticatorTransport,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON
} from '@simplewebauthn/server'
import type { AuthService, ClientContext, IssuedToken } from '../core/auth.js'
import { loginFailed } from '../errors/status.js'
import type { PasskeyStore } from './passkey-store.js'
import type { PendingStore } from './pending-store.js'

type WebAuthnLibrary = typeof import('@simplewebauthn/server')
let library: Promise<WebAuthnLibrary> | undefined
/**
 * @simplewebauthn/server, loaded at the first ceremony rather than at start: importing it costs
 * about 0.3 s of CPU (its ASN.1 and COSE code), which every service start, every command of the
 * CLI and every test file that builds the app paid, for passkeys most of them never use.
 */
async function webauthn (): Promise<WebAuthnLibrary> {
  library ??= import('@simplewebauthn/server')
  return await library
}

/**
 * Passkeys (WebAuthn, discoverable credentials) through @simplewebauthn/server. Each ceremony's
 * challenge is kept server-side for five minutes and answered once (taken, not read), so a
 * captured answer cannot be replayed. A passkey sign-in is a Login (AuthService.loginProven: the
 * same limits, counting, lifetime and audit); user verification is required, so a passkey is
 * something held and something known or being, and stands for the second factor too.
 */

export const CEREMONY_TTL_MS = 5 * 60_000

/** Who the passkeys belong to: the RP id (a registrable domain) and the origins a ceremony may come from. */
export interface RelyingParty {
  id: string
  origins: readonly string[]
}

export interface PasskeyCeremoniesDeps {
  auth: Pick<AuthService, 'loginProven'>
  passkeys: PasskeyStore
  pending: PendingStore
  /** Shown by the browser while a passkey is made. */
  rpName?: string
}

export interface PasskeyCeremonies {
  registrationOptions (account: { id: string, username: string }, rp: RelyingParty): Promise<PublicKeyCredentialCreationOptionsJSON>
  /** Stores the new passkey; false when the answer does not verify (or was for another account, or late). */
  register (accountId: string, response: RegistrationResponseJSON, rp: RelyingParty, name: string): Promise<boolean>
  authenticationOptions (rp: RelyingParty): Promise<PublicKeyCredentialRequestOptionsJSON>
  /** The Login a passkey's answer proves; 701 when it proves nothing. */
  signIn (response: AuthenticationResponseJSON, rp: RelyingParty, client: ClientContext, presentedToken: string | undefined): Promise<IssuedToken>
}

const toBase64Url = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url')
const fromBase64Url = (text: string): Uint8Array<ArrayBuffer> => new Uint8Array(Buffer.from(text, 'base64url'))

export function createPasskeyCeremonies ({ auth, passkeys, pending, rpName = 'auth-token-service' }: PasskeyCeremoniesDeps): PasskeyCeremonies {
  /** The challenge, once: true only for the first answer that names a challenge this service issued for `purpose`. */
  const answeredOnce = (purpose: string, expected?: string) => async (challenge: string): Promise<boolean> => {
    const held = await pending.take(`webauthn:${purpose}:${challenge}`)
    return held !== null && (expected === undefined || held === expected)
  }

  return {
    async registrationOptions (account, rp) {
      const existing = await passkeys.listByAccount(account.id)
      const options = await (await webauthn()).generateRegistrationOptions({
        rpName,
        rpID: rp.id,
        userName: account.username,
        // The user handle: the account id, never the name (an authenticator may show or sync it).
        userID: new TextEncoder().encode(account.id),
        challenge: randomBytes(32),
        attestationType: 'none',
        excludeCredentials: existing.map((passkey) => ({ id: passkey.id, transports: passkey.transports })),
        authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
        timeout: CEREMONY_TTL_MS
      })
      await pending.put(`webauthn:register:${options.challenge}`, account.id, CEREMONY_TTL_MS)
      return options
    },

    async register (accountId, response, rp, name) {
      let verification
      try {
        verification = await (await webauthn()).verifyRegistrationResponse({
          response,
          expectedChallenge: answeredOnce('register', accountId),
          expectedOrigin: [...rp.origins],
          expectedRPID: rp.id,
          requireUserVerification: true
        })
      } catch {
        return false
      }
      if (!verification.verified) return false
      const { credential } = verification.registrationInfo
      return await passkeys.create({
        id: credential.id,
        accountId,
        publicKey: toBase64Url(credential.publicKey),
        counter: credential.counter,
        transports: credential.transports ?? [],
        name: name.slice(0, 128)
      })
    },

    async authenticationOptions (rp) {
      // Discoverable credentials: no list of allowed ones, the authenticator offers the person's.
      const options = await (await webauthn()).generateAuthenticationOptions({ rpID: rp.id, userVerification: 'required', challenge: randomBytes(32), timeout: CEREMONY_TTL_MS })
      await pending.put(`webauthn:signin:${options.challenge}`, '1', CEREMONY_TTL_MS)
      return options
    },

    async signIn (response, rp, client, presentedToken) {
      // An unknown credential is no guess at anyone's secret (its id is the authenticator's random
      // handle): refused without counting, as nothing names an account to count against.
      const passkey = await passkeys.find(response.id)
      if (passkey === null) throw loginFailed()
      return await auth.loginProven({
        accountId: passkey.accountId,
        username: passkey.username,
        method: 'passkey',
        presentedToken,
        client,
        prove: async () => {
          let newCounter: number
          try {
            const verification = await (await webauthn()).verifyAuthenticationResponse({
              response,
              expectedChallenge: answeredOnce('signin'),
              expectedOrigin: [...rp.origins],
              expectedRPID: rp.id,
              credential: {
                id: passkey.id,
                publicKey: fromBase64Url(passkey.publicKey),
                counter: passkey.counter,
                transports: passkey.transports as AuthenticatorTransport[]
              },
              requireUserVerification: true
            })
            if (!verification.verified) return false
            newCounter = verification.authenticationInfo.newCounter
          } catch {
            // A bad signature, a replayed or foreign challenge, a counter that went back: no sign-in.
            return false
          }
          // A database failure here is a 503, not a failed sign-in.
          await passkeys.used(passkey.id, newCounter)
          return true
        }
      })
    }
  }
}
