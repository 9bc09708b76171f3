import t from 'tap'
import * as OTPAuth from 'otpauth'
import { base32Decode, base32Encode, hotp, matchingStep, otpauthUri, stepAt, totpAt } from '../../src/totp/rfc6238.js'

// RFC 6238 appendix B: the SHA-1 rows (the seed is the ASCII "12345678901234567890"), 8 digits.
const SEED = Buffer.from('12345678901234567890', 'ascii')
const VECTORS: Array<[number, string, string]> = [
  [59, '0000000000000001', '94287082'],
  [1111111109, '00000000023523EC', '07081804'],
  [1111111111, '00000000023523ED', '14050471'],
  [1234567890, '000000000273EF07', '89005924'],
  [2000000000, '0000000003F940AA', '69279037'],
  [20000000000, '0000000027BC86AA', '65353130']
]

t.test('RFC 6238 appendix B, SHA-1', async (t) => {
  for (const [seconds, stepHex, code] of VECTORS) {
    t.equal(stepAt(seconds * 1000), Number.parseInt(stepHex, 16), `T at ${seconds}`)
    t.equal(totpAt(SEED, seconds * 1000, 8), code, `TOTP at ${seconds}`)
  }
})

t.test('RFC 4226 appendix D, HOTP', async (t) => {
  const expected = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489']
  expected.forEach((code, counter) => { t.equal(hotp(SEED, counter), code, `counter ${counter}`) })
})

t.test('the same codes as otpauth, an independent authenticator-compatible generator', async (t) => {
  const secret = new OTPAuth.Secret({ size: 20 })
  const generator = new OTPAuth.TOTP({ secret, algorithm: 'SHA1', digits: 6, period: 30 })
  const bytes = base32Decode(secret.base32)
  t.ok(bytes)
  if (bytes === undefined) return
  t.equal(base32Encode(bytes), secret.base32.replace(/=+$/, ''), 'base32 round trip')
  for (const at of [0, 1_700_000_000_000, Date.now(), 4_102_444_800_000]) {
    t.equal(totpAt(bytes, at), generator.generate({ timestamp: at }), `at ${at}`)
  }
})

t.test('one step of drift either way, no more', async (t) => {
  const now = 1_700_000_015_000
  const step = stepAt(now)
  t.equal(matchingStep(SEED, hotp(SEED, step), now), step)
  t.equal(matchingStep(SEED, hotp(SEED, step - 1), now), step - 1)
  t.equal(matchingStep(SEED, hotp(SEED, step + 1), now), step + 1)
  t.equal(matchingStep(SEED, hotp(SEED, step - 2), now), undefined)
  t.equal(matchingStep(SEED, hotp(SEED, step + 2), now), undefined)
  t.equal(matchingStep(SEED, '12345', now), undefined, 'five digits')
  t.equal(matchingStep(SEED, 'abcdef', now), undefined, 'not digits')
})

t.test('the otpauth:// URI parses in otpauth and yields the same codes', async (t) => {
  const bytes = Buffer.from('0123456789abcdefghij')
  const uri = otpauthUri(base32Encode(bytes), 'auth-token-service', 'alice@example.org')
  t.match(uri, /^otpauth:\/\/totp\/auth-token-service:alice%40example\.org\?secret=/)
  const parsed = OTPAuth.URI.parse(uri)
  t.ok(parsed instanceof OTPAuth.TOTP)
  t.equal(parsed.issuer, 'auth-token-service')
  t.equal(parsed.label, 'alice@example.org')
  t.equal(parsed.generate({ timestamp: 1_700_000_000_000 }), totpAt(bytes, 1_700_000_000_000))
})
