import t from 'tap'
import { knownParameter } from '../../src/errors/reasons.js'
import { httpParserReason, malformedFormReason, validationReason } from '../../src/http/bad-request.js'
import { MalformedFormError, parseFormEncoded } from '../../src/http/form-encoding.js'

/* The reasons of a 400 (errors/reasons.ts): they name the service's own parameters only. */

function refusal (text: string): MalformedFormError {
  try {
    parseFormEncoded(text)
  } catch (error) {
    if (error instanceof MalformedFormError) return error
    throw error
  }
  throw new Error(`${text} was accepted`)
}

t.test('the form parser says what it refused, and a reason names only a known parameter', async (t) => {
  t.match(refusal('token=%ZZ'), { problem: 'percent-encoding', parameter: 'token' })
  t.match(refusal('t%ZZ=1'), { problem: 'percent-encoding', parameter: undefined }, 'a name that cannot be decoded is not kept')
  t.match(refusal('a=1&__proto__=2'), { problem: 'proto' })
  t.equal(malformedFormReason(refusal('token=%ZZ'), 'query string'), 'token has undecodable percent-encoding')
  t.equal(malformedFormReason(refusal('my-secret-name=%ZZ'), 'form body'), 'form body has undecodable percent-encoding', 'a name of the caller\'s is not repeated')
  t.equal(malformedFormReason(refusal('t%ZZ=1'), 'form body'), 'a parameter name in the form body has undecodable percent-encoding')
  t.equal(malformedFormReason(refusal('__proto__=1'), 'query string'), 'query string has a __proto__ parameter')
  for (const name of ['__proto__', 'constructor', 'Username', 'password ', '']) t.equal(knownParameter(name), undefined, `${JSON.stringify(name)} is not ours`)
})

t.test('schema failures: the first one, by keyword and by the shape of what was sent', async (t) => {
  const at = (keyword: string, name: string, params: Record<string, unknown> = {}) => ({ keyword, instancePath: `/${name}`, params })
  t.equal(validationReason(undefined, 'body', {}, false), 'request is not valid')
  t.equal(validationReason({ keyword: 'type', instancePath: '', params: {} }, 'body', [], false), 'body must be an object of parameters')
  t.equal(validationReason({ keyword: 'required', instancePath: '', params: { missingProperty: 'token' } }, 'params', {}, false), 'token is required')
  t.equal(validationReason(at('type', 'token'), 'querystring', { token: ['a', 'b'] }, true), 'token given more than once')
  t.equal(validationReason(at('type', 'token'), 'body', { token: ['a', 'b'] }, false), 'token must be a string', 'an array in JSON is not a repeat')
  t.equal(validationReason(at('maxLength', 'password'), 'body', { password: 'x' }, false), 'password is longer than 1024 bytes')
  t.equal(validationReason(at('minLength', 'username'), 'body', { username: '' }, false), 'username is empty')
  t.equal(validationReason(at('pattern', 'callback'), 'querystring', { callback: '1' }, true), 'padding function name in callback is not a valid identifier')
  t.equal(validationReason(at('pattern', 'username'), 'querystring', { username: 'a\u0000' }, true), 'username contains a NUL character')
  t.equal(validationReason(at('const', 'format'), 'querystring', { format: 'xml' }, true), 'format must be json')
  t.equal(validationReason(at('pattern', 'secret'), 'querystring', { secret: 'x' }, true), 'request is not valid', 'a parameter not ours is never named')
  t.equal(validationReason(at('format', 'token'), 'querystring', { token: 'x' }, true), 'token is not valid', 'an unforeseen keyword still names the parameter')
})

t.test('Node\'s HTTP parser errors', async (t) => {
  t.equal(httpParserReason('HPE_INVALID_METHOD'), 'request method is not valid')
  t.equal(httpParserReason('HPE_UNEXPECTED_CONTENT_LENGTH'), 'Content-Length is not valid')
  t.equal(httpParserReason('HPE_SOMETHING_NEW'), 'request is not valid HTTP/1.1')
  t.equal(httpParserReason(undefined), 'request is not valid HTTP/1.1')
})
