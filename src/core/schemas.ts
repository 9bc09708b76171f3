import { Type, type Static } from 'typebox'
import { PARAMETER_LIMITS, type Reason } from '../errors/reasons.js'

/**
 * Request and response schemas of the three operations. Parameters are strings
 * or absent: a parameter given twice arrives as an array and fails validation
 * (400), and so does an object, a number or a NUL byte.
 */

const NO_NUL = '^[^\\u0000]*$'
export const PADDING_FUNCTION_PATTERN = '^[A-Za-z_$][A-Za-z0-9_$]{0,63}$'

/** The limits of the answers table of docs/api.md (http/bad-request.ts keeps them, credentials.ts checks them after NFC). */
const USERNAME_MAX_CHARS = PARAMETER_LIMITS.username.max
/** A password over this many characters is over as many bytes; the byte limit itself is checked before hashing. */
const PASSWORD_MAX_CHARS = PARAMETER_LIMITS.password.max
const TOKEN_MAX_CHARS = PARAMETER_LIMITS.token.max

/** Examples /docs shows (app/openapi.ts), each what a person would type or get. */
export const EXAMPLE_USERNAME = 'alice'
export const EXAMPLE_PASSWORD = 'correct horse battery staple'
export const EXAMPLE_TOKEN = '2Kcq3VZr9wQ0hM5c1xT8bYpLd2Fj7sNnAeUo4iGtHyW6Ek'
export const EXAMPLE_EXPIRATION = '2026-11-22T23:41:48'

// Login's query and body values may be empty (a body value wins over an empty query one, contract);
// an empty value that is used is refused by the auth service with the same detail.
const Username = (minLength = 0) => Type.String({
  ...(minLength > 0 ? { minLength } : {}),
  maxLength: USERNAME_MAX_CHARS,
  pattern: NO_NUL,
  description: `The account's name: 1–${USERNAME_MAX_CHARS} characters (after Unicode NFC); case-folded, so Alice and alice are one account (stored in that form).`
})
const Password = (minLength = 0) => Type.String({
  ...(minLength > 0 ? { minLength } : {}),
  maxLength: PASSWORD_MAX_CHARS,
  pattern: NO_NUL,
  description: `The password: 1–${PARAMETER_LIMITS.password.max} bytes of UTF-8 (after Unicode NFC); any character but NUL, checked exactly as sent.`
})
const Token = (description: string) => Type.String({ maxLength: TOKEN_MAX_CHARS, pattern: NO_NUL, description })
/** A TOTP code (6 digits, spaces allowed) or a recovery code (XXXX-XXXX-XXXX-XXXX). */
const OneTimeCode = (description: string) => Type.String({ maxLength: 64, pattern: NO_NUL, description })

export const LoginParamsSchema = Type.Object({
  username: Type.Optional(Username()),
  password: Type.Optional(Password()),
  token: Type.Optional(Token('An active token of the same account, to refresh it: the answer is that token with its full lifetime again.')),
  otp: Type.Optional(OneTimeCode('The second factor of an account that has one: the 6-digit code of its authenticator app, or one of its recovery codes. ' +
    'Right password without it: 401 with status 702.'))
})

export const LegacyLoginPathSchema = Type.Object({
  username: Username(1),
  password: Password(1)
})

const TOKEN_GIVEN = 'The token Login gave (46 characters).'

export const TokenPathSchema = Type.Object({
  token: Token(TOKEN_GIVEN)
})

const PaddingName = (description: string) => Type.Optional(Type.String({ pattern: PADDING_FUNCTION_PATTERN, description }))
const SAME_AS_JSONP_FUNCTION = 'The same as jsonpFunction, spelt otherwise.'

export const TokenParamsSchema = Type.Object({
  token: Type.Optional(Token(TOKEN_GIVEN))
})

export const AuthenticateParamsSchema = Type.Object({
  token: Type.Optional(Token(TOKEN_GIVEN)),
  format: Type.Optional(Type.Literal('json', { description: 'Only json (the default) is accepted.' })),
  jsonpFunction: PaddingName('Answer as `function <name>() {return <status object>;}` (JavaScript, always HTTP 200): ' +
    'a JavaScript identifier of 1–64 characters, not a reserved word nor a global a page relies on (alert, setTimeout, Object, constructor…).'),
  jsopFunction: PaddingName(SAME_AS_JSONP_FUNCTION),
  jsonpFormat: PaddingName(SAME_AS_JSONP_FUNCTION),
  callback: PaddingName(SAME_AS_JSONP_FUNCTION)
})
export type AuthenticateParams = Static<typeof AuthenticateParamsSchema>

/** The padding-function parameter's four spellings, all accepted (contract). */
export const PADDING_PARAMETER_NAMES = ['jsonpFunction', 'jsopFunction', 'jsonpFormat', 'callback'] as const

/** Every error is this object; a 400 adds `detail`, what is wrong with the request. */
export const StatusMessageSchema = Type.Object({
  status: Type.Integer(),
  message: Type.String(),
  detail: Type.Optional(Type.String())
})

const EXPIRATION_DATE = Type.String({
  description: 'When the token stops authenticating: UTC, YYYY-MM-DDTHH:MM:SS, no zone and no fraction.',
  examples: [EXAMPLE_EXPIRATION]
})

export const SuccessSchema = Type.Object({
  status: Type.Literal(0),
  message: Type.Literal('Success')
}, { description: 'Success: status 0', examples: [{ status: 0, message: 'Success' }] })

export const LoginSuccessSchema = Type.Object({
  status: Type.Literal(0),
  message: Type.Literal('Success'),
  token: Type.String({ description: 'The token (also set as the AuthToken1 cookie).' }),
  AuthToken: Type.String({ description: 'The same token, under the name older clients read.' }),
  expiration_date: EXPIRATION_DATE
}, {
  description: 'Success: status 0, the token, and the AuthToken1 cookie set',
  examples: [{ status: 0, message: 'Success', token: EXAMPLE_TOKEN, AuthToken: EXAMPLE_TOKEN, expiration_date: EXAMPLE_EXPIRATION }]
})

/** Beyond the contract's two fields: who the token belongs to, for verifiers that act on it (the guard). */
/** An account's groups in an answer: sorted, each once, `[]` for none (api-contract, Groups and access rules). */
export const GROUPS = Type.Array(Type.String(), { description: 'The account\'s groups, sorted; [] when none' })

/** The groups of a record that has none: one shared array, not one a request. */
export const NO_GROUPS: readonly string[] = Object.freeze([])

export const AuthenticateSuccessSchema = Type.Object({
  status: Type.Literal(0),
  message: Type.Literal('Success'),
  expiration_date: EXPIRATION_DATE,
  account_id: Type.String(),
  username: Type.String(),
  federated: Type.Boolean(),
  kind: Type.Optional(Type.Union([Type.Literal('token'), Type.Literal('api_key'), Type.Literal('oidc')], { description: 'A Login token, an API key, or an OpenID Connect access token' })),
  key_id: Type.Optional(Type.String({ description: 'The API key\'s id (kind api_key only)' })),
  client_id: Type.Optional(Type.String({ description: 'The OpenID Connect client the access token went to (kind oidc only)' })),
  groups: GROUPS
}, {
  description: 'Success: status 0, the token (or API key) is active',
  examples: [{ status: 0, message: 'Success', expiration_date: EXAMPLE_EXPIRATION, account_id: '1', username: EXAMPLE_USERNAME, federated: false, kind: 'token', groups: ['ops'] }]
})

/** One error answer as /docs shows it: what it means, an example body, the headers it carries. */
function errorAnswer (description: string, example: { status: number, message: string, detail?: string }, headers?: Record<string, { type: 'string', description: string }>) {
  return Type.Object({
    status: Type.Integer(),
    message: Type.String(),
    ...(example.detail === undefined ? {} : { detail: Type.String({ description: 'What is wrong: a parameter and the problem, never a value sent.' }) })
  }, { description, examples: [example], ...(headers === undefined ? {} : { headers }) })
}

const RETRY_AFTER = { type: 'string' as const, description: 'Seconds to wait before trying again.' }

/** A 400, with an example of a detail the operation gives. */
const badRequestAnswer = (detail: Reason) => errorAnswer('Bad Request: `detail` names the parameter and what is wrong with it (never a value sent)',
  { status: 400, message: 'Bad Request', detail })

/** The other error answers of the operations, each with its own example (docs/api.md, Answers). */
export const ERROR_ANSWERS = {
  401: errorAnswer('Login Failed (status 701): unknown user, wrong password, disabled account, or a wrong, reused or expired second-factor code, answered alike. ' +
    'Second Factor Required (status 702): the password was right and the account has a second factor, but no otp came',
  { status: 701, message: 'Login Failed' }),
  403: Type.Object({
    status: Type.Integer(),
    message: Type.String(),
    detail: Type.Optional(Type.String({ description: 'Why, when it is not the token: `cross-site request`.' }))
  }, {
    description: 'Unauthorized: the token is missing, unknown, expired or ended. Or Forbidden, with detail `cross-site request`: ' +
      'a browser request from another site or an origin not allowed (Login, Logout)',
    examples: [{ status: 403, message: 'Unauthorized' }]
  }),
  404: errorAnswer('Not Found: no such route (an extra path segment, another spelling: paths are case-sensitive)',
    { status: 404, message: 'Not Found' }),
  405: errorAnswer('Method Not Allowed: another method on this path; Allow names the right ones',
    { status: 405, message: 'Method Not Allowed' }, { Allow: { type: 'string', description: 'The methods this path takes, e.g. POST.' } }),
  413: errorAnswer('Payload Too Large: a body over the limit (16 KiB unless AUTH_BODY_LIMIT_BYTES says otherwise)',
    { status: 413, message: 'Payload Too Large' }),
  415: errorAnswer('Unsupported Media Type: a body that is neither application/x-www-form-urlencoded nor application/json',
    { status: 415, message: 'Unsupported Media Type' }),
  429: errorAnswer('Too Many Requests: too many failed logins for the account or from the client address (even the right password waits)',
    { status: 429, message: 'Too Many Requests' }, { 'Retry-After': RETRY_AFTER }),
  503: errorAnswer('Service Unavailable: Redis, Postgres or the directory cannot be reached, or too many logins are waiting for a hash (then with Retry-After); never a false Success',
    { status: 503, message: 'Service Unavailable' }, { 'Retry-After': RETRY_AFTER })
} as const
type ErrorStatus = keyof typeof ERROR_ANSWERS

/**
 * The response schemas of an operation that answers 400 (shown with `badRequestExample`) and
 * `statuses`: each with its own example, and a status-message object for any other error (the
 * 4xx and 5xx ranges).
 */
export function errorResponses (badRequestExample: Reason, ...statuses: ErrorStatus[]) {
  return {
    400: badRequestAnswer(badRequestExample),
    ...Object.fromEntries(statuses.map((status) => [status, ERROR_ANSWERS[status]])) as Partial<typeof ERROR_ANSWERS>,
    '4xx': Type.Object(StatusMessageSchema.properties, {
      description: 'Another client error, answered before any route: 408 Request Timeout, 431 Request Header Fields Too Large',
      examples: [{ status: 431, message: 'Request Header Fields Too Large' }]
    }),
    '5xx': Type.Object(StatusMessageSchema.properties, {
      description: 'A fault of the service: 500 Internal Server Error, never with a stack trace',
      examples: [{ status: 500, message: 'Internal Server Error' }]
    })
  }
}

/* Sessions and password change (api-contract, "Extensions"). */

const DATE = (description: string) => Type.String({ description: `${description}: UTC, YYYY-MM-DDTHH:MM:SS, no zone and no fraction.`, examples: [EXAMPLE_EXPIRATION] })
export const EXAMPLE_SESSION_ID = 'Vq3m0XhA8cTz1LbQe5RkNw'

export const SessionSchema = Type.Object({
  id: Type.String({ description: 'The session id: public and random (128 bits), not the token and not derivable to it.' }),
  created: DATE('When its Login issued the token'),
  refreshed: Type.Union([DATE('When a Login last refreshed it'), Type.Null()]),
  expiration_date: DATE('When its token stops authenticating'),
  ip: Type.String({ description: 'The client address of the Login that began it (X-Forwarded-For only from a trusted proxy).' }),
  user_agent: Type.String({ description: 'The User-Agent of that Login: at most 256 characters, control characters escaped as \\uXXXX.' }),
  federated: Type.Boolean(),
  current: Type.Boolean({ description: 'This is the session of the token the request was made with.' })
})
export type SessionItem = Static<typeof SessionSchema>

const EXAMPLE_SESSION: SessionItem = {
  id: EXAMPLE_SESSION_ID,
  created: '2026-11-22T11:41:48',
  refreshed: null,
  expiration_date: EXAMPLE_EXPIRATION,
  ip: '203.0.113.7',
  user_agent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0',
  federated: false,
  current: true
}

export const SessionListSchema = Type.Object({
  status: Type.Literal(0),
  message: Type.Literal('Success'),
  sessions: Type.Array(SessionSchema)
}, {
  description: 'Success: the active sessions of the token\'s account, newest first',
  examples: [{ status: 0, message: 'Success', sessions: [EXAMPLE_SESSION] }]
})

export const SessionIdPathSchema = Type.Object({
  id: Type.String({ description: 'A session id from GET /auth/sessions.' })
})

export const SessionsEndedSchema = Type.Object({
  status: Type.Literal(0),
  message: Type.Literal('Success'),
  ended: Type.Integer({ description: 'How many sessions ended.' })
}, { description: 'Success: status 0 and how many sessions ended', examples: [{ status: 0, message: 'Success', ended: 2 }] })

/** A 403 of a route that also refuses for a reason of its own (its `detail`). */
export const forbiddenAnswer = (description: string, detail: Reason) => Type.Object({
  status: Type.Integer(),
  message: Type.String(),
  detail: Type.Optional(Type.String())
}, {
  description: `Unauthorized: the token is missing, unknown, expired or ended. Forbidden with a detail: ${description}, ` +
    'or `cross-site request` (a browser request from another site or an origin not allowed)',
  examples: [{ status: 403, message: 'Unauthorized' }, { status: 403, message: 'Forbidden', detail }]
})

export const PasswordChangeBodySchema = Type.Object({
  token: Type.Optional(Token(TOKEN_GIVEN)),
  current_password: Type.Optional(Type.String({
    maxLength: PASSWORD_MAX_CHARS,
    pattern: NO_NUL,
    description: 'The account\'s password now, checked as Login checks it (a wrong one counts as a failed Login).'
  })),
  new_password: Type.Optional(Type.String({
    maxLength: PASSWORD_MAX_CHARS,
    pattern: NO_NUL,
    description: 'The password from now on: the password policy applies (length, common and breached passwords, the username).'
  }))
})

/* The second factor (api-contract, "Second factor"). */

/**
 * The step-up for what outlives the caller's token (a new API key, a second factor, a passkey):
 * the account's password in the same request's body, never the query string.
 */
export const CurrentPasswordSchema = Type.String({
  maxLength: PASSWORD_MAX_CHARS,
  pattern: NO_NUL,
  description: 'Required. The account\'s password now (a federated account\'s: the directory\'s), checked as Login checks it: ' +
    'missing, 400; wrong, 401 with status 701, counted as a failed Login toward the same lockout. A token alone buys nothing that outlives it.'
})

export const StepUpBodySchema = Type.Object({
  token: Type.Optional(Token(TOKEN_GIVEN)),
  current_password: Type.Optional(CurrentPasswordSchema)
})

export const TotpCodeBodySchema = Type.Object({
  token: Type.Optional(Token(TOKEN_GIVEN)),
  code: Type.Optional(OneTimeCode('A code of the authenticator app (6 digits).'))
})

export const TotpRemoveBodySchema = Type.Object({
  token: Type.Optional(Token(TOKEN_GIVEN)),
  current_password: Type.Optional(Type.String({ maxLength: PASSWORD_MAX_CHARS, pattern: NO_NUL, description: 'The account\'s password now, checked as Login checks it.' })),
  code: Type.Optional(OneTimeCode('A code of the authenticator app, or a recovery code; checked as Login checks otp.'))
})

export const TotpEnrollmentSchema = Type.Object({
  status: Type.Literal(0),
  message: Type.Literal('Success'),
  secret: Type.String({ description: 'The shared secret in base32, to type into an authenticator app.' }),
  otpauth_uri: Type.String({ description: 'The same as an otpauth://totp/ URI, to paste or to show as a QR code.' }),
  recovery_codes: Type.Array(Type.String(), { description: 'Ten one-time codes, shown this once; each works where a code does.' })
})
