import { Type, type TProperties } from 'typebox'
import { AUDIT_EVENT_NAMES } from '../core/stores/audit-log.js'
import { EXAMPLE_PASSWORD, EXAMPLE_USERNAME } from '../core/schemas.js'

/** The admin API's request and answer shapes (api-contract.md, "Admin API"). */

const DATE = (description: string) => Type.String({ description: `${description}: UTC, YYYY-MM-DDTHH:MM:SS (the expiration_date form)`, examples: ['2026-11-22T11:41:48'] })
const NULLABLE_DATE = (description: string) => Type.Union([DATE(description), Type.Null()])

export const MAX_PAGE = 1000
export const DEFAULT_PAGE = 100

export const Limit = Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, description: `Items per page (1-${MAX_PAGE}, default ${DEFAULT_PAGE})` }))
export const Cursor = Type.Optional(Type.String({ maxLength: 2048, description: 'The next_cursor of the previous page' }))

export const UsernamePathSchema = Type.Object({ username: Type.String({ minLength: 1, maxLength: 1024 }) })
export const SessionPathSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) })

export const UserListQuerySchema = Type.Object({ limit: Limit, cursor: Cursor }, { additionalProperties: false })
export const KeyListQuerySchema = Type.Object({ limit: Limit, cursor: Cursor }, { additionalProperties: false })

export const NewUserSchema = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 1024, examples: [EXAMPLE_USERNAME] }),
  password: Type.Optional(Type.String({ maxLength: 4096, description: 'Required unless federated (the directory checks a federated account). The password policy applies.', examples: [EXAMPLE_PASSWORD] })),
  federated: Type.Optional(Type.Boolean({ default: false })),
  kind: Type.Optional(Type.Union([Type.Literal('person'), Type.Literal('service')], {
    default: 'person', description: 'service: no password, never a Login; it authenticates with API keys'
  })),
  email: Type.Optional(Type.String({ maxLength: 320, description: 'Where recovery and invitation mail goes (docs/recovery.md)', examples: ['alice@example.org'] })),
  invite: Type.Optional(Type.Boolean({ default: false, description: 'true (with email, without password): the account gets a mailed link, valid 7 days, to set its first password' }))
}, { additionalProperties: false })

export const UserChangeSchema = Type.Object({
  disabled: Type.Optional(Type.Boolean({ description: 'true disables the account and ends its sessions; false enables it' })),
  password: Type.Optional(Type.String({ maxLength: 4096, description: 'A new password (the policy applies); ends the account\'s sessions' })),
  // Null first: the admin API's validator coerces types, and would make a null the string ''.
  email: Type.Optional(Type.Union([Type.Null(), Type.String({ maxLength: 320 })], { description: 'Where recovery mail goes; null removes it' }))
}, { additionalProperties: false, minProperties: 1 })

export const EventsQuerySchema = Type.Object({
  user: Type.Optional(Type.String({ maxLength: 1024, description: 'Only this account\'s events' })),
  since: Type.Optional(Type.String({ maxLength: 64, description: 'Only events at or after this ISO 8601 date or date-time' })),
  event: Type.Optional(Type.Union(AUDIT_EVENT_NAMES.map((name) => Type.Literal(name)), { description: 'Only events of this kind' })),
  limit: Limit,
  cursor: Cursor
}, { additionalProperties: false })

export const UserSchema = Type.Object({
  username: Type.String(),
  kind: Type.Union([Type.Literal('person'), Type.Literal('service')]),
  totp: Type.Boolean({ description: 'Whether a second factor is active (always false until TOTP exists)' }),
  federated: Type.Boolean(),
  disabled: Type.Boolean(),
  locked_until: NULLABLE_DATE('Until when failed logins lock the account; null when not locked'),
  created: DATE('When the account was created'),
  last_login: NULLABLE_DATE('The last successful Login; null when none is known'),
  groups: Type.Array(Type.String(), { description: 'Every group the account is in, sorted: its local groups and, for a federated account, those its directory named at its last Login' }),
  directory_groups: Type.Array(Type.String(), { description: 'Of those, the ones its directory named (set at each Login; always [] for a local account)' }),
  email: Type.Union([Type.String(), Type.Null()], { description: 'Where recovery and invitation mail goes; null: none' })
})

export const EventSchema = Type.Object({
  time: Type.String({ description: 'When it happened: ISO 8601, UTC, milliseconds' }),
  event: Type.String({ examples: ['login.success'] }),
  username: Type.Union([Type.String(), Type.Null()]),
  account_id: Type.Union([Type.String(), Type.Null()]),
  client_ip: Type.Union([Type.String(), Type.Null()]),
  user_agent: Type.Union([Type.String(), Type.Null()]),
  outcome: Type.String(),
  credential: Type.Union([Type.String(), Type.Null()], {
    description: 'Which credential made an administrative change: `key:` and the first 8 hex digits of the admin key\'s SHA-256, or `local-cli`; null for events of a person\'s own requests'
  }),
  actor: Type.Union([Type.String(), Type.Null()], {
    description: 'The account that made an administrative change from the admin console (its username); null for the admin API, the command line and a person\'s own requests'
  })
})

export const SessionSchema = Type.Object({
  id: Type.String(),
  created: DATE('When the session began'),
  refreshed: NULLABLE_DATE('When a Login last refreshed it; null when never'),
  expiration_date: DATE('When its token stops working'),
  ip: Type.String(),
  user_agent: Type.String(),
  federated: Type.Boolean(),
  current: Type.Boolean({ description: 'Always false here (the admin presents no token)' })
})

export const success = <P extends TProperties>(properties: P, description: string) =>
  Type.Object({ status: Type.Literal(0), message: Type.Literal('Success'), ...properties }, { description })

export const NextCursor = Type.Union([Type.String(), Type.Null()], { description: 'Where the next page starts; null on the last page' })

export const UserListAnswerSchema = success({ users: Type.Array(UserSchema), next_cursor: NextCursor }, 'A page of accounts, in username order')
export const UserAnswerSchema = success({ user: UserSchema }, 'The account')
export const EndedAnswerSchema = success({ user: UserSchema, sessions_ended: Type.Integer() }, 'The account as it is now, and how many sessions the change ended')
export const DeletedAnswerSchema = success({ sessions_ended: Type.Integer() }, 'The account is gone; how many sessions ended with it')
export const EventListAnswerSchema = success({ events: Type.Array(EventSchema), next_cursor: NextCursor }, 'A page of audit events, oldest first')
export const SessionListAnswerSchema = success({ sessions: Type.Array(SessionSchema) }, 'The account\'s active sessions, newest first')
export const SessionsEndedAnswerSchema = success({ sessions_ended: Type.Integer() }, 'How many sessions ended')
export const EndedOneAnswerSchema = Type.Object({ status: Type.Literal(0), message: Type.Literal('Success') }, { description: 'The session ended' })

export const AdminErrorSchema = Type.Object({
  status: Type.Integer(),
  message: Type.String(),
  detail: Type.Optional(Type.String({ description: 'What is wrong, never a value sent' }))
}, { description: 'An error: 400 (detail names the parameter), 401 (no or wrong admin key), 404 (no such account or session), 409 (username taken), 429 (too many wrong keys from this address; Retry-After), 503' })

export const KeyPathSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) })

export const NewKeySchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 512, description: 'What the key is for (1-128 characters)', examples: ['billing-prod'] }),
  expires_in_days: Type.Optional(Type.Integer({ description: 'Days until it expires: default 90, at most AUTH_API_KEY_MAX_DAYS (default 365)' }))
}, { additionalProperties: false })

export const KeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  created: DATE('When the key was made'),
  expiration_date: DATE('When the key stops working'),
  last_used: NULLABLE_DATE('When it was last used (may lag by a minute); null when never')
})

export const CreatedKeyAnswerSchema = success({ key: KeySchema, secret: Type.String({ description: 'atsk_…: shown this once, never again' }) }, 'The new key and its secret')
export const KeyListAnswerSchema = success({ keys: Type.Array(KeySchema), next_cursor: NextCursor }, 'A page of the account\'s live keys, oldest first')
export const KeyAnswerSchema = success({ key: KeySchema }, 'The key, now ended')

export const DeliveriesQuerySchema = Type.Object({
  status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('failed'), Type.Literal('delivered')], { description: 'Only deliveries in this state' })),
  limit: Limit,
  cursor: Cursor
}, { additionalProperties: false })

export const DeliveryPathSchema = Type.Object({ id: Type.String({ pattern: '^[0-9]{1,18}$', description: 'A delivery\'s id, as the list names it' }) })

const NULLABLE_TIME = (description: string) => Type.Union([Type.String({ description: `${description}: ISO 8601, UTC` }), Type.Null()])

export const DeliverySchema = Type.Object({
  id: Type.String({ description: 'The delivery (one event to one URL)' }),
  webhook_id: Type.String({ description: 'The webhook-id header of every attempt: the event\'s' }),
  type: Type.String({ examples: ['login.success'] }),
  url: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('failed'), Type.Literal('delivered')]),
  attempts: Type.Integer(),
  created: Type.String({ description: 'When the event happened: ISO 8601, UTC' }),
  next_attempt: NULLABLE_TIME('When it is tried next (pending only)'),
  delivered: NULLABLE_TIME('When the receiver took it'),
  last_error: Type.Union([Type.String(), Type.Null()], { description: 'What the last failed attempt met (an HTTP status, a timeout, a refused connection)' })
})

export const DeliveryListAnswerSchema = success({ deliveries: Type.Array(DeliverySchema), next_cursor: NextCursor }, 'A page of webhook deliveries, oldest first')
export const DeliveryRetryAnswerSchema = Type.Object({ status: Type.Literal(0), message: Type.Literal('Success') }, { description: 'The delivery is pending again, due now, with a fresh retry window' })
