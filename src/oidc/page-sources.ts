import type { Configuration, KoaContextWithOIDC } from 'oidc-provider'
import type { UserStore } from '../core/stores/user-store.js'
import { brandFor, pageHeaders, type Notice } from '../sign-in/index.js'
import { confirmDevicePage, deviceDonePage, logoutPage, notSignedInPage, signedOutPage, userCodePage, type ProviderForm } from './flow-pages.js'

/**
 * oidc-provider's page hooks (`features.deviceFlow.*Source`, `features.rpInitiatedLogout.*Source`)
 * answered with the service's pages (pages.ts), under the sign-in pages' headers: the strict
 * Content-Security-Policy, never framed.
 */

export interface PageSourceDeps {
  /** AUTH_SIGNIN_TITLE: whose pages these are (else the host name asked for). */
  signinTitle: string | undefined
  /** AUTH_REDIRECT_ALLOWED: where a page's form may lead, besides this origin. */
  redirectAllowed: readonly string[]
  users: Pick<UserStore, 'findById'>
  /** The username of the browser's active sign-in, or undefined. */
  signedInAs: (ctx: KoaContextWithOIDC) => Promise<string | undefined>
  /** The client of a request as the service's trust of proxies sees it. */
  clientOf: (ctx: KoaContextWithOIDC) => { ip: string, userAgent?: string | undefined }
}

type DeviceFlow = NonNullable<NonNullable<Configuration['features']>['deviceFlow']>
type RpInitiatedLogout = NonNullable<NonNullable<Configuration['features']>['rpInitiatedLogout']>

export interface PageSources {
  deviceFlow: Required<Pick<DeviceFlow, 'userCodeInputSource' | 'userCodeConfirmSource' | 'successSource' | 'deviceInfo'>>
  rpInitiatedLogout: Required<Pick<RpInitiatedLogout, 'logoutSource' | 'postLogoutSuccessSource'>>
  /**
   * Where oidc-provider answers with a page that posts itself on by a script (which the strict
   * policy would block, and which shows nothing): the service's page with the same form and a button
   * instead. The verification link's code (`verification_uri_complete`): the entry page, filled in,
   * for the person to check; a logout request with no one signed in: say so, and go on. True when
   * the answer was replaced.
   */
  replaceFormPost: (ctx: KoaContextWithOIDC) => boolean
}

/** What a refused code tells the person (oidc-provider's errors of the code entry, by name). */
function codeNotice (error: Error | undefined): Notice | undefined {
  switch (error?.name) {
    case undefined: return undefined
    case 'NoCodeError': return { kind: 'error', text: 'Enter the code your device shows.' }
    case 'NotFoundError': return { kind: 'error', text: 'That code is not right. Check it and try again.' }
    case 'ExpiredError': return { kind: 'error', text: 'That code has expired. Start again on your device.' }
    case 'AlreadyUsedError': return { kind: 'error', text: 'That code was used already. Start again on your device.' }
    case 'AbortedError': return { kind: 'info', text: 'Denied: the device was not signed in.' }
    default: return { kind: 'error', text: 'That did not work. Enter the code again.' }
  }
}

const text = (value: unknown): string | undefined => typeof value === 'string' && value !== '' ? value : undefined

function originOf (uri: string | undefined): string | undefined {
  if (uri === undefined) return undefined
  try {
    return new URL(uri).origin
  } catch {
    return undefined
  }
}

export function createPageSources (deps: PageSourceDeps): PageSources {
  const brandOf = (ctx: KoaContextWithOIDC): string => brandFor(deps.signinTitle, ctx.hostname)
  /** `formTargets`: origins besides this one a page's form may lead to (its answer's redirect), as AUTH_REDIRECT_ALLOWED's hosts are. */
  const serve = (ctx: KoaContextWithOIDC, body: string, formTargets: readonly string[] = []): void => {
    ctx.set({ ...pageHeaders([...deps.redirectAllowed, ...formTargets]), 'cache-control': 'no-store' })
    ctx.body = body
  }
  const formOf = (ctx: KoaContextWithOIDC, route: string): ProviderForm => ({ action: ctx.oidc.urlFor(route), xsrf: text(ctx.oidc.session?.state?.secret) ?? '' })
  const clientName = (ctx: KoaContextWithOIDC): string | undefined => ctx.oidc.client === undefined ? undefined : ctx.oidc.client.clientName ?? ctx.oidc.client.clientId
  const usernameOf = async (accountId: string | undefined): Promise<string | undefined> =>
    accountId === undefined ? undefined : (await deps.users.findById(accountId))?.username

  const userCodeInputSource: PageSources['deviceFlow']['userCodeInputSource'] = (ctx, _form, _out, error) => {
    const code = error !== undefined && 'userCode' in error ? text(error.userCode) : undefined
    serve(ctx, userCodePage({ brand: brandOf(ctx), form: formOf(ctx, 'code_verification'), code, message: codeNotice(error) }))
  }

  return {
    deviceFlow: {
      // Shown on the confirmation, for the person to recognise their device: its address as the service's AUTH_TRUST_PROXY reads it.
      deviceInfo (ctx) {
        const client = deps.clientOf(ctx)
        return { ip: client.ip, ua: client.userAgent }
      },
      userCodeInputSource,
      async userCodeConfirmSource (ctx, _form, client, deviceInfo, userCode) {
        serve(ctx, confirmDevicePage({
          brand: brandOf(ctx),
          form: formOf(ctx, 'code_verification'),
          clientName: client.clientName ?? client.clientId,
          userCode,
          username: await deps.signedInAs(ctx),
          device: { ip: text(deviceInfo.ip), userAgent: text(deviceInfo.ua) }
        }))
      },
      successSource (ctx) {
        serve(ctx, deviceDonePage({ brand: brandOf(ctx), clientName: clientName(ctx) ?? 'The device' }))
      }
    },
    rpInitiatedLogout: {
      async logoutSource (ctx) {
        const postLogout = originOf(text(ctx.oidc.session?.state?.postLogoutRedirectUri))
        // The confirmation's answer sends the browser to the client's post-logout URI: form-action must allow its origin.
        serve(ctx, logoutPage({
          brand: brandOf(ctx),
          form: formOf(ctx, 'end_session_confirm'),
          clientName: clientName(ctx),
          username: await usernameOf(ctx.oidc.session?.accountId)
        }), postLogout === undefined ? [] : [postLogout])
      },
      postLogoutSuccessSource (ctx) {
        serve(ctx, signedOutPage({ brand: brandOf(ctx), clientName: clientName(ctx) }))
      }
    },
    replaceFormPost (ctx) {
      if (ctx.status !== 200 || ctx.method !== 'GET') return false
      const code = text(ctx.oidc.params?.user_code)
      if (ctx.oidc.route === 'code_verification' && code !== undefined) {
        serve(ctx, userCodePage({ brand: brandOf(ctx), form: formOf(ctx, 'code_verification'), code }))
        return true
      }
      if (ctx.oidc.route === 'end_session' && ctx.oidc.session?.accountId === undefined) {
        const postLogout = originOf(text(ctx.oidc.session?.state?.postLogoutRedirectUri))
        serve(ctx, notSignedInPage({ brand: brandOf(ctx), form: formOf(ctx, 'end_session_confirm'), clientName: clientName(ctx) }), postLogout === undefined ? [] : [postLogout])
        return true
      }
      return false
    }
  }
}
