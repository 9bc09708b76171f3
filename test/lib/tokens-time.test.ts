import t from 'tap'
import { generateToken, hashToken, isTokenShaped } from '../../src/lib/tokens.js'
import { expiryInstant, formatExpirationDate } from '../../src/lib/time.js'

t.test('tokens: 256 bits, base64url, distinct; only the SHA-256 is stored', async (t) => {
  const tokens = new Set(Array.from({ length: 1000 }, generateToken))
  t.equal(tokens.size, 1000)
  for (const token of tokens) {
    t.equal(Buffer.from(token, 'base64url').length, 32)
    t.ok(isTokenShaped(token))
  }
  t.equal(hashToken('abc'), 'ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0')
  t.notOk(isTokenShaped('*'))
  t.notOk(isTokenShaped(`${generateToken()}\r\n`))
  t.notOk(isTokenShaped(generateToken().slice(1)))
})

t.test('expiration dates: whole seconds, UTC, no zone', async (t) => {
  const issuedAt = Date.UTC(2026, 10, 22, 10, 0, 0, 750)
  const expiresAt = expiryInstant(issuedAt, 43200)
  t.equal(expiresAt, Date.UTC(2026, 10, 22, 22, 0, 0, 0), 'truncated to the second the date names')
  t.equal(formatExpirationDate(expiresAt), '2026-11-22T22:00:00')
  t.ok(expiresAt - issuedAt <= 43200 * 1000 && expiresAt - issuedAt > 43199 * 1000)
})
