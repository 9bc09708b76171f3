import { Type } from 'typebox'
import { checkText, keywords, variables, type Env } from '../variables.js'
import { origin, OriginSchema } from './http.js'

/** The browser sign-in: where it may send a person back to, the name it shows, and passkeys (src/sign-in). */
export const SignInSchema = Type.Object({
  AUTH_REDIRECT_ALLOWED: Type.Array(Type.String({ caseInsensitive: true, pattern: '^\\.?[a-z0-9-]+(\\.[a-z0-9-]+)*$', expected: 'host names such as app.example.org or .example.org (no scheme, port or path)' }), { default: [], docDefault: 'unset: the sign-in page\'s own origin only', description: 'hosts the sign-in page may send a person back to (`rd`): `app.example.org` that host, `.example.org` that domain and every subdomain; any port, http or https ([Browser sign-in](browser-sign-in.md))' }),
  AUTH_SIGNIN_TITLE: Type.Optional(Type.String({ docDefault: 'unset: the host name the browser asked for', description: 'the name the sign-in and account pages show beside the icon: whose sign-in this is (e.g. `Example Corp`) ([Browser sign-in](browser-sign-in.md))' })),
  AUTH_WEBAUTHN_RP_ID: Type.Optional(Type.String({ caseInsensitive: true, pattern: '^[a-z0-9-]+(\\.[a-z0-9-]+)*$', expected: 'a domain name such as example.org', docDefault: 'unset: the host the sign-in page was asked for', description: 'the passkeys\' relying-party id, a domain (`example.org`: passkeys work on every subdomain\'s sign-in page); changing it orphans the passkeys registered under the old one' })),
  AUTH_WEBAUTHN_ORIGINS: Type.Array(OriginSchema, { default: [], docDefault: 'unset: the sign-in page\'s own origin', description: 'origins a passkey ceremony may come from (`https://app.example.org,https://wiki.example.org`)' })
}, { $id: 'sign-in', title: 'Browser sign-in and passkeys', description: 'The sign-in and account pages ([Browser sign-in](browser-sign-in.md)).' })

export interface SignInSettings {
  /** Hosts the sign-in page may send a person back to besides its own origin: `app.example.org` that host, `.example.org` every subdomain. */
  redirectAllowed: readonly string[]
  /** The name the sign-in and account pages show; undefined: the host name the browser asked for. */
  signinTitle: string | undefined
  /** The WebAuthn relying party id; undefined: the host the sign-in page was asked for. */
  webauthnRpId: string | undefined
  /** Origins a passkey ceremony may come from; empty: the sign-in page's own origin. */
  webauthnOrigins: readonly string[]
}

export function readSignIn (env: Env): SignInSettings {
  const vars = variables(SignInSchema, env)
  return {
    redirectAllowed: vars.read('AUTH_REDIRECT_ALLOWED'),
    signinTitle: vars.read('AUTH_SIGNIN_TITLE'),
    webauthnRpId: vars.read('AUTH_WEBAUTHN_RP_ID'),
    webauthnOrigins: vars.read('AUTH_WEBAUTHN_ORIGINS').map((entry) => origin('AUTH_WEBAUTHN_ORIGINS', keywords(OriginSchema), entry))
  }
}

/** The relying-party id as the service will use it, a caller's override included. */
export function checkSignIn (settings: SignInSettings): void {
  if (settings.webauthnRpId !== undefined) checkText('AUTH_WEBAUTHN_RP_ID', keywords(SignInSchema.properties.AUTH_WEBAUTHN_RP_ID), settings.webauthnRpId)
}
