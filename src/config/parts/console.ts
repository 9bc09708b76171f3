import { Type } from 'typebox'
import { variables, type Env } from '../variables.js'

/** The admin console for people: whether it is served, and who may use it (src/console). */
export const ConsoleSchema = Type.Object({
  AUTH_CONSOLE: Type.Boolean({ default: true, description: '`false`: no admin console (every `/console` page answers 404) ([Admin console](console.md))' }),
  AUTH_ADMIN_GROUP: Type.String({ default: 'admins', pattern: '^[a-z0-9][a-z0-9._-]{0,63}$', expected: 'a group name: 1 to 64 characters of a-z, 0-9, ".", "_" and "-", starting with a letter or a digit', description: 'the group whose members may use the admin console; a signed-in account outside it gets a 403 page ([Admin console](console.md))' })
}, { $id: 'console', title: 'Admin console', description: 'The pages for the people who run accounts ([Admin console](console.md)).' })

export interface ConsoleSettings {
  /** Whether /console is served on the public port. */
  consoleOn: boolean
  /** The group whose members may use the console. */
  adminGroup: string
}

export function readConsole (env: Env): ConsoleSettings {
  const vars = variables(ConsoleSchema, env)
  return { consoleOn: vars.read('AUTH_CONSOLE'), adminGroup: vars.read('AUTH_ADMIN_GROUP') }
}
