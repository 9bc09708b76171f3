/**
 * Our own spans (argon2 hashing, LDAP binds, PGlite queries) without a dependency: this
 * module imports nothing, so code that may be traced does not load OpenTelemetry when
 * tracing is off. tracing/start.ts installs a runner when it is on; until then `inSpan`
 * is a plain call.
 */

/** Attribute values as OpenTelemetry takes them. Never a password, a token or a hash of one. */
export type SpanAttributes = Readonly<Record<string, string | number | boolean>>

export type SpanRunner = <T>(name: string, attributes: SpanAttributes, work: () => Promise<T>) => Promise<T>

let runner: SpanRunner | undefined

/** Runs `work` inside a span named `name` (a child of the active one) when tracing is on. */
export async function inSpan<T> (name: string, attributes: SpanAttributes, work: () => Promise<T>): Promise<T> {
  return runner === undefined ? await work() : await runner(name, attributes, work)
}

/** Called once by tracing/start.ts. */
export function useSpanRunner (run: SpanRunner | undefined): void {
  runner = run
}
