import t from 'tap'
import fc from 'fast-check'
import { generateToken, hashToken, isTokenShaped, TOKEN_DIGEST_LENGTH } from '@auth-token-service/protocol/token'
import { expiryInstant, formatExpirationDate } from '../../src/core/time.js'

t.test('tokens: 256 bits, base64url, distinct; only the SHA-256 is stored', async (t) => {
  const tokens = new Set(Array.from({ length: 1000 }, (_, i) => generateToken(String(i))))
  t.equal(tokens.size, 1000)
  for (const token of tokens) {
    t.equal(token.length, 46)
    t.equal(Buffer.from(token.slice(3), 'base64url').length, 32, '256 random bits after the version and bucket')
    t.ok(isTokenShaped(token))
  }
  // SHA-256 of 2AB + 43 'a's is i49Ei4I9gl-mzraviS5w-CwAOxLpz5WlCS0M9NQtGHI in base64url: the bucket, then its first 22 characters.
  t.equal(hashToken(`2AB${'a'.repeat(43)}`), 'ABi49Ei4I9gl-mzraviS5w-C')
  t.equal(TOKEN_DIGEST_LENGTH, 22)
  const digests = new Set([...tokens].map(hashToken))
  t.equal(digests.size, 1000, 'distinct tokens, distinct digests')
  for (const digest of digests) t.match(digest, /^[A-P][A-Za-z0-9_-]{23}$/, 'the bucket, then 22 characters of digest')
  t.notOk(isTokenShaped('*'))
  t.notOk(isTokenShaped(`${generateToken('1')}\r\n`))
  t.notOk(isTokenShaped(generateToken('1').slice(1)))
  // The 43-character tokens of before 0.2.0 are gone: one is malformed, like any other string.
  t.notOk(isTokenShaped(generateToken('1').slice(3)), 'a 43-character token of the layout before 0.2.0')
  t.notOk(isTokenShaped('A'.repeat(43)))
  t.notOk(isTokenShaped(`3${generateToken('1').slice(1)}`), 'another version character')
})

t.test('expiration dates: whole seconds, UTC, no zone', async (t) => {
  const issuedAt = Date.UTC(2026, 10, 22, 10, 0, 0, 750)
  const expiresAt = expiryInstant(issuedAt, 43200)
  t.equal(expiresAt, Date.UTC(2026, 10, 22, 22, 0, 0, 0), 'truncated to the second the date names')
  t.equal(formatExpirationDate(expiresAt), '2026-11-22T22:00:00')
  t.ok(expiresAt - issuedAt <= 43200 * 1000 && expiresAt - issuedAt > 43199 * 1000)
})

t.test('expiration dates: the fast formatter writes what toISOString does', async (t) => {
  const reference = (ms: number): string => new Date(ms).toISOString().slice(0, 19)
  let compared = 0
  fc.assert(fc.property(fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2200, 0, 1) }), (ms) => {
    compared++
    return formatExpirationDate(ms) === reference(ms)
  }), { seed: 20261122, numRuns: 5000 })
  t.equal(compared, 5000)
  // Day, month, year and leap-day edges, and years toISOString writes with six digits.
  for (const ms of [0, Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(2026, 11, 31, 23, 59, 59), Date.UTC(2027, 0, 1), Date.UTC(2100, 1, 28, 12), Date.UTC(9999, 11, 31, 23, 59, 59), Date.UTC(10000, 0, 1), -1000, Date.UTC(-1, 0, 1)]) {
    t.equal(formatExpirationDate(ms), reference(ms), `${reference(ms)}`)
  }
  // More distinct days than the formatter caches, twice over.
  for (let round = 0; round < 2; round++) {
    for (let day = 0; day < 40; day++) {
      const ms = Date.UTC(2026, 10, 1 + day, day % 24, day, 59 - day)
      t.equal(formatExpirationDate(ms), reference(ms))
    }
  }
})
