import t from 'tap'
import fc from 'fast-check'
import { MalformedFormError, parseFormEncoded } from '../../src/http/form-encoding.js'

t.test('decodes percent-encoding and plus as space', async (t) => {
  const params = parseFormEncoded('username=ann&password=p%26ss+w%3Drd%2B%25%2F%23%22%27&empty=&flag')
  t.equal(params.username, 'ann')
  t.equal(params.password, 'p&ss w=rd+%/#"\'')
  t.equal(params.empty, '')
  t.equal(params.flag, '')
  t.equal(Object.getPrototypeOf(params), null, 'no prototype to pollute')
})

t.test('a repeated key becomes an array, for the schema to refuse', async (t) => {
  t.same(parseFormEncoded('a=1&a=2&a=3').a, ['1', '2', '3'])
})

t.test('undecodable percent-encoding and __proto__ are refused', async (t) => {
  t.throws(() => parseFormEncoded('a=%zz'), MalformedFormError)
  t.throws(() => parseFormEncoded('a=%E0%A4%A'), MalformedFormError)
  t.throws(() => parseFormEncoded('__proto__=x'), MalformedFormError)
  t.throws(() => parseFormEncoded('__pro%74o__=x'), MalformedFormError, 'encoded too')
})

t.test('unicode survives', async (t) => {
  t.equal(parseFormEncoded(`p=${encodeURIComponent('pässwörd 🔑')}`).p, 'pässwörd 🔑')
})

/** The parser as it was first written (split on `&`): the indexOf walk must agree with it on anything. */
function referenceParse (text: string): Record<string, string | string[]> | 'malformed' {
  const params: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>
  const decode = (piece: string): string => decodeURIComponent(piece.replaceAll('+', ' '))
  try {
    for (const piece of text.split('&')) {
      if (piece.length === 0) continue
      const eq = piece.indexOf('=')
      const key = decode(eq < 0 ? piece : piece.slice(0, eq))
      const value = eq < 0 ? '' : decode(piece.slice(eq + 1))
      if (key === '__proto__') return 'malformed'
      const seen = params[key]
      if (seen === undefined) params[key] = value
      else if (typeof seen === 'string') params[key] = [seen, value]
      else seen.push(value)
    }
  } catch {
    return 'malformed'
  }
  return params
}

t.test('agrees with a split-based reference on arbitrary input', async (t) => {
  const piece = fc.oneof(fc.constantFrom('&', '=', '+', '%', '%2', '%41', '%zz', 'a', 'token', '__proto__', ''), fc.string({ maxLength: 6 }))
  const input = fc.oneof(fc.array(piece, { maxLength: 12 }).map((parts) => parts.join('')), fc.string({ maxLength: 40 }))
  let compared = 0
  fc.assert(fc.property(input, (text) => {
    let actual: Record<string, string | string[]> | 'malformed'
    try {
      actual = { ...parseFormEncoded(text) }
    } catch (error) {
      if (!(error instanceof MalformedFormError)) throw error
      actual = 'malformed'
    }
    const expected = referenceParse(text)
    compared++
    return JSON.stringify(actual) === JSON.stringify(expected === 'malformed' ? expected : { ...expected })
  }), { seed: 20261122, numRuns: 3000 })
  t.equal(compared, 3000, '3000 inputs compared')
  t.same({ ...parseFormEncoded('&&a=1&&b&=x&') }, { a: '1', b: '', '': 'x' }, 'empty pieces skipped, empty key kept')
})

t.test('names past the interned ones are kept as they come', async (t) => {
  const text = Array.from({ length: 600 }, (_, i) => `name${i}=${i}`).join('&')
  const first = parseFormEncoded(text)
  const again = parseFormEncoded(text)
  t.equal(Object.keys(first).length, 600, 'every name, the 256 interned ones and the rest')
  t.ok(Object.entries(again).every(([name, value]) => name === `name${value as string}`), 'each name with its own value, parsed twice')
  t.equal(Object.getPrototypeOf(again), null)
})
