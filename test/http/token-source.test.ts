import t from 'tap'
import { AMBIGUOUS_COOKIE, bearerToken, cookieToken, MALFORMED_AUTHORIZATION, MALFORMED_PARAMETER, presentedToken } from '@auth-token-service/protocol/token-source'

/** The one token-source module (routes and guard): each source's parsing, and the order. */

const A = 'q3VZr9wQ0hM5c1xT8bYpLd2Fj7sNnAeUo4iGtHyW6Ek'
const B = 'Zq3VZr9wQ0hM5c1xT8bYpLd2Fj7sNnAeUo4iGtHyW6E'

t.test('cookieToken reads every AuthToken1, never the first alone', async (t) => {
  t.equal(cookieToken(undefined), undefined, 'no header')
  t.equal(cookieToken('theme=dark'), undefined, 'no AuthToken1')
  t.equal(cookieToken(`AuthToken1=${A}`), A, 'one')
  t.equal(cookieToken(` theme=dark ;  AuthToken1 = ${A} ; x=1`), A, 'spaces around names and values')
  t.equal(cookieToken(`AuthToken1="${A}"`), A, 'quoted')
  t.equal(cookieToken(`AuthToken1=${A}; AuthToken1=${B}`), AMBIGUOUS_COOKIE, 'two values')
  t.equal(cookieToken(`AuthToken1=${B}; x=1; AuthToken1=${A}`), AMBIGUOUS_COOKIE, 'two values, apart')
  t.equal(cookieToken(`AuthToken1=${A}; AuthToken1="${A}"`), A, 'the same value twice is one')
  t.equal(cookieToken(`AuthToken1=; AuthToken1=${A}`), A, 'an empty one is none')
  t.equal(cookieToken(`XAuthToken1=${B}; AuthToken10=${B}; AuthToken1=${A}`), A, 'names that only contain it are other cookies')
  t.equal(cookieToken('AuthToken1=%41%42'), 'AB', 'percent-decoded as @fastify/cookie does')
  t.equal(cookieToken('AuthToken1=%E0%A4%A'), '%E0%A4%A', 'undecodable: kept as sent (no token has a %)')
})

t.test('bearerToken: Bearer <token68> or nothing of ours', async (t) => {
  t.equal(bearerToken(`Bearer ${A}`), A)
  t.equal(bearerToken(`bEaReR \t${A}`), A, 'any case, spaces or tabs')
  t.equal(bearerToken('Bearer abc+/=='), 'abc+/==', 'token68 as RFC 6750 allows (not our shape: refused later as unknown)')
  t.equal(bearerToken('Basic YTpi'), undefined, 'another scheme')
  t.equal(bearerToken('Bearerish x'), undefined, 'a scheme that only starts like it')
  t.equal(bearerToken(''), undefined, 'empty')
  for (const broken of ['Bearer', 'Bearer ', `Bearer ${A} x`, 'Bearer a=b=c', 'Bearer "x"', 'Bearer a,b']) {
    t.equal(bearerToken(broken), MALFORMED_AUTHORIZATION, `"${broken}" is malformed`)
  }
})

t.test('presentedToken: path, parameter (body before query), Bearer, cookie, with where it was found', async (t) => {
  const all = { params: { token: 'path' }, query: { token: 'query' }, body: { token: 'body' }, headers: { authorization: `Bearer ${A}`, cookie: `AuthToken1=${B}` } }
  t.same(presentedToken(all), { token: 'path', source: 'path' })
  t.same(presentedToken({ ...all, params: {} }), { token: 'body', source: 'body' })
  t.same(presentedToken({ ...all, params: {}, body: undefined }), { token: 'query', source: 'query' })
  t.same(presentedToken({ ...all, params: {}, body: {}, query: { token: '' } }), { token: A, source: 'bearer' }, 'empty values are absent')
  t.same(presentedToken({ headers: { cookie: `AuthToken1=${B}` } }), { token: B, source: 'cookie' })
  t.same(presentedToken({ query: { token: B }, headers: { cookie: `AuthToken1=${B}` } }), { token: B, source: 'query' }, 'the same value in the cookie too: the parameter is the source')
  t.equal(presentedToken({ headers: {} }), undefined)
  t.equal(presentedToken({ ...all, headers: { authorization: 'Bearer' } }), MALFORMED_AUTHORIZATION, 'a malformed Bearer header, whatever else is there')
  t.equal(presentedToken({ query: { token: [A, B] }, headers: {} }), MALFORMED_PARAMETER, 'a parameter given twice (unvalidated input)')
  t.equal(presentedToken({ body: { token: 1 }, query: { token: A }, headers: {} }), MALFORMED_PARAMETER, 'a malformed body value is not passed over for the query')
  t.equal(presentedToken({ headers: { cookie: `AuthToken1=${A}; AuthToken1=${B}` } }), AMBIGUOUS_COOKIE)
  t.same(presentedToken({ query: { token: A }, headers: { cookie: `AuthToken1=${A}; AuthToken1=${B}` } }), { token: A, source: 'query' }, 'two cookies matter only when the cookie is the source')
})
