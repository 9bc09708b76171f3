import { encode } from 'uqr'
import { html, type Markup } from './html.js'

/**
 * A QR code as inline SVG markup, drawn on the server: the page needs no script, no external
 * service and no image route, and the CSP's `img-src 'self'` is not involved (inline SVG is
 * markup). Colours are presentation attributes, not style, so `style-src 'self'` holds.
 * Error correction M (15 %) and the standard's quiet zone of four modules: an otpauth:// URI of
 * a 20-byte secret makes a symbol of about 45 modules, 5 px each on the page.
 */
export function qrSvg (text: string, label: string): Markup {
  const { size, data } = encode(text, { ecc: 'M', border: 4 })
  const modules: string[] = []
  data.forEach((row, y) => {
    row.forEach((dark, x) => { if (dark) modules.push(`M${x},${y}h1v1h-1z`) })
  })
  // role="img" with its label: a screen reader says what it is, not a grid of squares.
  return html`<svg class="qr" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${size} ${size}" width="${size * 5}" height="${size * 5}" role="img" aria-label="${label}" shape-rendering="crispEdges"><rect width="${size}" height="${size}" fill="#fff"/><path fill="#000" d="${modules.join('')}"/></svg>`
}
