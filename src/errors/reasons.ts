/**
 * Why a request is a 400: the `detail` of its answer and of its access-log line. A reason
 * names one of the service's own parameters and what is wrong with it, never a value the
 * caller sent: the detail goes back to whoever sent the request and into the log, and a
 * value sent may be a password or a token. Reasons are made only here, from fixed words
 * and the names below, so the details the service can give are a closed set.
 */
declare const reasonBrand: unique symbol
export type Reason = string & { readonly [reasonBrand]: true }

const reason = (text: string): Reason => text as Reason

/** The parameters a reason may name: the service's own, never a name the caller made up. */
export const PARAMETERS = ['username', 'password', 'token', 'format', 'jsonpFunction', 'jsopFunction', 'jsonpFormat', 'callback', 'current_password', 'new_password', 'otp', 'code', 'limit', 'cursor', 'name', 'expires_in_days'] as const
export type Parameter = typeof PARAMETERS[number]

/** The admin API's parameters (admin/schemas.ts): its reasons may name these. */
export const ADMIN_PARAMETERS = ['username', 'password', 'federated', 'disabled', 'limit', 'cursor', 'user', 'since', 'event', 'id', 'kind', 'name', 'expires_in_days', 'status', 'email', 'invite',
  'client_id', 'redirect_uris', 'post_logout_redirect_uris', 'public', 'backchannel_logout_uri'] as const
export type AdminParameter = typeof ADMIN_PARAMETERS[number]

const KNOWN: ReadonlySet<string> = new Set(PARAMETERS)

/** `name` as a parameter a reason may name, or undefined when it is not one of ours. */
export function knownParameter (name: string | undefined): Parameter | undefined {
  return name !== undefined && KNOWN.has(name) ? name as Parameter : undefined
}

/**
 * The longest value each parameter takes, in the unit the limit is kept in (docs/api.md, Answers);
 * a username counts code points and a password bytes, after NFC (credentials.ts).
 */
export const PARAMETER_LIMITS: Readonly<Record<'username' | PasswordParameter | 'token', { max: number, unit: 'characters' | 'bytes' }>> = {
  username: { max: 256, unit: 'characters' },
  password: { max: 1024, unit: 'bytes' },
  // POST /auth/Password's two: passwords like any other.
  current_password: { max: 1024, unit: 'bytes' },
  new_password: { max: 1024, unit: 'bytes' },
  token: { max: 2048, unit: 'characters' }
}

/** The parameters that carry a password. */
export type PasswordParameter = 'password' | 'current_password' | 'new_password'

export const PADDING: ReadonlySet<Parameter> = new Set(['jsonpFunction', 'jsopFunction', 'jsonpFormat', 'callback'])

/** An OpenID Connect client's URL parameters (the admin API's names): each checked by the same rule. */
export type ClientUriParameter = 'redirect_uris' | 'post_logout_redirect_uris' | 'backchannel_logout_uri'

/** Where a parameter or a body came from, for reasons that cannot name a parameter. */
export type Source = 'query string' | 'form body' | 'path'

export const reasons = {
  required: (parameter: Parameter) => reason(`${parameter} is required`),
  givenMoreThanOnce: (parameter: Parameter) => reason(`${parameter} given more than once`),
  notAString: (parameter: Parameter) => reason(`${parameter} must be a string`),
  notAWholeNumber: (parameter: Parameter) => reason(`${parameter} must be a whole number`),
  notTrueOrFalse: (parameter: Parameter) => reason(`${parameter} must be true or false`),
  empty: (parameter: Parameter) => reason(`${parameter} is empty`),
  tooLong: (parameter: keyof typeof PARAMETER_LIMITS) => {
    const { max, unit } = PARAMETER_LIMITS[parameter]
    return reason(`${parameter} is longer than ${max} ${unit}`)
  },
  containsNul: (parameter: Parameter) => reason(`${parameter} contains a NUL character`),
  formatNotJson: () => reason('format must be json'),
  paddingNotIdentifier: (parameter: Parameter) => reason(`padding function name in ${parameter} is not a valid identifier`),
  paddingReserved: (parameter: Parameter) => reason(`padding function name in ${parameter} is a reserved word`),
  paddingGlobal: (parameter: Parameter) => reason(`padding function name in ${parameter} is a global a page relies on`),
  paddingNamesDiffer: () => reason('two different padding function names given'),
  notValid: (parameter: Parameter) => reason(`${parameter} is not valid`),
  badPercentEncoding: (where: Parameter | Source | 'a parameter name in the query string' | 'a parameter name in the form body') =>
    reason(`${where} has undecodable percent-encoding`),
  protoParameter: (source: Source) => reason(`${source} has a __proto__ parameter`),
  pathSegmentTooLong: (max: number) => reason(`a path segment is longer than ${max} characters`),
  // secure-json-parse refuses a __proto__ key as it refuses a syntax error (Fastify keeps no cause).
  bodyNotJson: () => reason('body is not valid JSON, or holds a __proto__ key'),
  emptyJsonBody: () => reason('body is empty but Content-Type is application/json'),
  bodyNotUtf8: () => reason('body is not valid UTF-8'),
  bodyNotObject: () => reason('body must be an object of parameters'),
  bodyLengthMismatch: () => reason('body length does not match Content-Length'),
  bodyUnreadable: () => reason('body could not be read'),
  hostRequired: () => reason('Host header is required'),
  hostGivenMoreThanOnce: () => reason('Host header given more than once'),
  contentTypeRequired: () => reason('Content-Type header is required'),
  httpRequestLine: () => reason('request line is not valid HTTP/1.1'),
  httpMethod: () => reason('request method is not valid'),
  httpTarget: () => reason('request target is not valid'),
  httpVersion: () => reason('HTTP version is not valid'),
  httpHeader: () => reason('a header line is not valid'),
  httpContentLength: () => reason('Content-Length is not valid'),
  httpTransferEncoding: () => reason('Transfer-Encoding is not valid, or given with Content-Length'),
  httpChunk: () => reason('a chunk of the body is not valid'),
  httpOther: () => reason('request is not valid HTTP/1.1'),
  requestNotValid: () => reason('request is not valid'),
  crossSiteRequest: () => reason('cross-site request'),
  passwordTooShort: (min: number, parameter: PasswordParameter = 'password') => reason(`${parameter} is shorter than ${min} characters`),
  passwordCommon: (parameter: PasswordParameter = 'password') => reason(`${parameter} is on a list of common and breached passwords`),
  passwordHasUsername: (parameter: PasswordParameter = 'password') => reason(`${parameter} contains the username`),
  federatedPassword: () => reason('the directory owns this account\'s password'),
  unknownSession: () => reason('no such session of this account'),
  unknownKey: () => reason('no such key of this account'),
  // The second factor's: never the code or secret, only what is wrong.
  totpAlreadyActive: () => reason('a second factor is already active: remove it first'),
  totpNotPending: () => reason('no enrollment waits for confirmation: POST /auth/totp first'),
  totpNotActive: () => reason('no second factor is active'),
  codeNotMatching: () => reason('code does not match'),
  usernameRefusedCharacter: () => reason('username holds a space, control, invisible or unassigned character'),
  usernameCompatibilityCharacter: () => reason('username holds a compatibility character (a ligature, or a circled, superscript or styled letter)'),
  authorizationNotBearer: () => reason('Authorization header is not a valid Bearer credential'),
  // The admin API's (admin/): its own parameters, and what its 401 and 404 say.
  adminParameterNotValid: (parameter: AdminParameter) => reason(`${parameter} is not valid`),
  adminParameterRequired: (parameter: AdminParameter) => reason(`${parameter} is required`),
  serviceAccountPassword: () => reason('a service account has no password (it authenticates with API keys)'),
  serviceAccountFederated: () => reason('a service account cannot be federated'),
  apiKeyDaysOutOfRange: (max: number) => reason(`expires_in_days must be a whole number from 1 to ${max}`),
  unknownGroup: () => reason('no account is in this group'),
  groupNameNotValid: () => reason('groups holds a name that is not a group name: 1 to 64 characters of a-z, 0-9, ".", "_" and "-", starting with a letter or a digit'),
  tooManyGroups: (max: number) => reason(`an account may be in at most ${max} groups`),
  groupsNotAList: () => reason('groups must be a list of group names'),
  apiKeyNameNotValid: () => reason('name must be 1 to 128 characters, without control characters'),
  apiKeysPerAccountReached: (max: number) => reason(`the account holds ${max} live API keys, the most it may (AUTH_API_KEYS_PER_ACCOUNT)`),
  // The OpenID Connect provider's clients (src/oidc): the rule a URL broke, never the URL.
  clientNameNotValid: () => reason('name must be 1 to 128 characters, without control characters'),
  redirectUriRequired: () => reason('redirect_uris needs at least one URL'),
  clientUriNotValid: (parameter: ClientUriParameter, maxLength: number) =>
    reason(`${parameter} ${parameter === 'backchannel_logout_uri' ? 'must be an absolute URL' : 'must hold absolute URLs'}, https (http only for localhost, 127.0.0.1 or [::1]), without a fragment, at most ${maxLength} characters`),
  tooManyClientUris: (parameter: ClientUriParameter, max: number) => reason(`${parameter} holds more than ${max} URLs`),
  noSuchClient: () => reason('no such client'),
  oidcOff: () => reason('the OpenID Connect provider is off (AUTH_OIDC_ISSUER is not set)'),
  adminKeyRequired: () => reason('Authorization: Bearer with the admin key is required'),
  adminKeyWrong: () => reason('the admin key is not valid'),
  unknownAccount: () => reason('no such account'),
  noSuchSession: () => reason('no such session'),
  noSuchKey: () => reason('no such key'),
  noSuchDelivery: () => reason('no such failed or pending delivery'),
  // Account recovery by email (src/recovery): never the address itself.
  emailNotValid: () => reason('email is not a valid address (local part and domain, at most 254 characters)'),
  mailOff: () => reason('mail is off (AUTH_SMTP_URL is not set)'),
  noEmail: () => reason('the account has no email address'),
  inviteWithPassword: () => reason('an invitation sets no password: send invite with email, or password without invite'),
  notInvitable: () => reason('only a person\'s local account (not federated, not disabled) gets recovery or invitation mail'),
  noSuchConsolePage: () => reason('no such page in the admin console'),
  noSuchMailDelivery: () => reason('no such failed or pending mail whose link is still valid'),
  accountDisabled: () => reason('the account is disabled'),
  usernameTaken: () => reason('username is taken'),
  // Log-only reasons of refusals whose answer carries no detail (a 403 or 401 is byte-identical).
  cookieGivenMoreThanOnce: () => reason('AuthToken1 cookie given more than once'),
  notInGroups: () => reason('the account is in none of the groups the group parameter names'),
  originalUriNotTrusted: () => reason('X-Forwarded-Uri or X-Original-URI sent by an untrusted client, ignored'),
  originalUrisDiffer: () => reason('X-Forwarded-Uri and X-Original-URI differ: no query token')
} as const
