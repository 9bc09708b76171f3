import t from 'tap'
import { MalformedFormError, parseFormEncoded } from '../../src/lib/form-encoding.js'

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
