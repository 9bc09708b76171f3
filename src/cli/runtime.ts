/**
 * Which Node this project runs on: 24 (its own, from node_modules/.bin) or 22.12 and later.
 * Kept free of imports, so that main.ts can ask before loading anything an older Node may not load.
 */
export const OLDEST_SUPPORTED = '22.12.0'

/** The one line that refuses `version` (as process.versions.node gives it), or undefined when it is supported. */
export function runtimeRefusal (version: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  if (major > 22 || (major === 22 && minor >= 12)) return undefined
  return `Node ${version} is not supported: use Node 24 (or ${OLDEST_SUPPORTED} and later). ` +
    '`npm start`, `npm test` and `npx auth-token-service` run the project\'s own Node 24 from node_modules/.bin (installed by npm ci)'
}
