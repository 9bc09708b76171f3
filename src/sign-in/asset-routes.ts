import type { FastifyInstance } from 'fastify'
import { refuseOtherMethods } from '../http/methods.js'
import { ASSET_PATH } from './pages.js'
import { CLIENT_SCRIPT, ICON, STYLESHEET, webauthnBrowserBundle } from './assets.js'

/** The pages' files: the CSP's 'self' scripts and style, and the icon. */
export async function assetRoutes (assets: FastifyInstance): Promise<void> {
  const serve = (path: string, type: string, body: string): void => {
    assets.get(`${ASSET_PATH}/${path}`, { schema: { hide: true } }, async (_request, reply) =>
      await reply.header('content-type', type).header('x-content-type-options', 'nosniff').send(body))
    refuseOtherMethods(assets, `${ASSET_PATH}/${path}`, ['GET'])
  }
  serve('signin.css', 'text/css; charset=utf-8', STYLESHEET)
  serve('signin.js', 'text/javascript; charset=utf-8', CLIENT_SCRIPT)
  serve('webauthn.js', 'text/javascript; charset=utf-8', webauthnBrowserBundle())
  serve('icon.svg', 'image/svg+xml', ICON)
  // Browsers ask for /favicon.ico of any page without a link to an icon (the JSON answers too).
  assets.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) =>
    await reply.header('content-type', 'image/svg+xml').header('x-content-type-options', 'nosniff').send(ICON))
  refuseOtherMethods(assets, '/favicon.ico', ['GET'])
}
