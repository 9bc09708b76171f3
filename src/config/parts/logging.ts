import { Type } from 'typebox'
import { variables, type Env } from '../variables.js'

/** Buffered log text that is written at once, without waiting (logging/log-destination.ts); the smallest LOG_BUFFER_BYTES. */
export const LOG_FLUSH_BYTES = 64 * 1024
/** Text held while stdout does not take it (LOG_BUFFER_BYTES); past it, new lines are dropped and counted. */
export const DEFAULT_LOG_BUFFER_BYTES = 4 * 1024 * 1024

/** The log's level, look and buffer, and the audit trail's buffer (src/logging). */
export const LoggingSchema = Type.Object({
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info', description: 'pino level' }),
  LOG_BUFFER_BYTES: Type.Integer({ minimum: LOG_FLUSH_BYTES, maximum: 1024 * 1024 * 1024, default: DEFAULT_LOG_BUFFER_BYTES, description: 'log text held while stdout takes none (its reader slow or stopped); past it new lines are dropped and counted (see [Logs](operations.md#logs))' }),
  NODE_ENV: Type.String({ default: 'development', description: 'how logs look at a terminal only (pretty when `development` and stdout is a terminal); it decides nothing about security' }),
  AUTH_AUDIT_BUFFER: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 10_000, description: 'audit events held in memory before new ones are dropped (and counted)' })
}, { $id: 'logging', title: 'Logs and the audit trail', description: 'JSON lines on stdout ([Logs](operations.md#logs)), and the audit events written to the database.' })

export interface LoggingSettings {
  /** NODE_ENV: only how logs look at a terminal; it decides nothing about security (an unset NODE_ENV must not weaken a deployment). */
  nodeEnv: string
  logLevel: string
  /** Log text held while stdout takes none (its reader slow or stopped); past it lines are dropped and counted. */
  logBufferBytes: number
  /** Audit events buffered in memory before new ones are dropped (and counted). */
  auditBufferSize: number
}

export function readLogging (env: Env): LoggingSettings {
  const vars = variables(LoggingSchema, env)
  return {
    nodeEnv: vars.read('NODE_ENV'),
    logLevel: vars.read('LOG_LEVEL'),
    logBufferBytes: vars.read('LOG_BUFFER_BYTES'),
    auditBufferSize: vars.read('AUTH_AUDIT_BUFFER')
  }
}
