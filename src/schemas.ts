import { Type, type Static } from 'typebox'
import { PARAMETER_LIMITS } from './lib/bad-request.js'

/**
 * Request and response schemas of the three operations. Parameters are strings
 * or absent: a parameter given twice arrives as an array and fails validation
 * (400), and so does an object, a number or a NUL byte.
 */

const NO_NUL = '^[^\\u0000]*$'
export const PADDING_FUNCTION_PATTERN = '^[A-Za-z_$][A-Za-z0-9_$]{0,63}$'

const Param = (maxLength: number) => Type.Optional(Type.String({ maxLength, pattern: NO_NUL }))

/** The limits of README's answers table (lib/bad-request.ts keeps them, lib/text.ts checks them after NFC). */
const USERNAME_MAX_CHARS = PARAMETER_LIMITS.username.max
/** A password over this many characters is over as many bytes; the byte limit itself is checked before hashing. */
const PASSWORD_MAX_CHARS = PARAMETER_LIMITS.password.max
const TOKEN_MAX_CHARS = PARAMETER_LIMITS.token.max

const Username = (options = {}) => Type.String({ minLength: 1, maxLength: USERNAME_MAX_CHARS, pattern: NO_NUL, ...options })
const Password = (options = {}) => Type.String({ minLength: 1, maxLength: PASSWORD_MAX_CHARS, pattern: NO_NUL, ...options })

export const LoginParamsSchema = Type.Object({
  username: Type.Optional(Username()),
  password: Type.Optional(Password()),
  token: Param(TOKEN_MAX_CHARS)
})
export type LoginParams = Static<typeof LoginParamsSchema>

export const LegacyLoginPathSchema = Type.Object({
  username: Username(),
  password: Password()
})
export type LegacyLoginPath = Static<typeof LegacyLoginPathSchema>

export const TokenPathSchema = Type.Object({
  token: Type.String({ maxLength: TOKEN_MAX_CHARS, pattern: NO_NUL })
})
export type TokenPath = Static<typeof TokenPathSchema>

const PaddingName = Type.Optional(Type.String({ pattern: PADDING_FUNCTION_PATTERN }))

export const TokenParamsSchema = Type.Object({
  token: Param(TOKEN_MAX_CHARS)
})
export type TokenParams = Static<typeof TokenParamsSchema>

export const AuthenticateParamsSchema = Type.Object({
  token: Param(TOKEN_MAX_CHARS),
  format: Type.Optional(Type.Literal('json')),
  jsonpFunction: PaddingName,
  jsopFunction: PaddingName,
  jsonpFormat: PaddingName,
  callback: PaddingName
})
export type AuthenticateParams = Static<typeof AuthenticateParamsSchema>

/** The padding-function parameter's four spellings, all accepted (contract). */
export const PADDING_PARAMETER_NAMES = ['jsonpFunction', 'jsopFunction', 'jsonpFormat', 'callback'] as const

export const StatusMessageSchema = Type.Object({
  status: Type.Integer(),
  message: Type.String(),
  detail: Type.Optional(Type.String())
})

export const LoginSuccessSchema = Type.Object({
  status: Type.Literal(0),
  message: Type.Literal('Success'),
  token: Type.String(),
  AuthToken: Type.String(),
  expiration_date: Type.String()
})

/** Beyond the contract's two fields: who the token belongs to, for verifiers that act on it (the guard). */
export const AuthenticateSuccessSchema = Type.Object({
  status: Type.Literal(0),
  message: Type.Literal('Success'),
  expiration_date: Type.String(),
  account_id: Type.String(),
  username: Type.String(),
  federated: Type.Boolean()
})

export const errorResponses = {
  '4xx': StatusMessageSchema,
  '5xx': StatusMessageSchema
} as const
