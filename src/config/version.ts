import { readFileSync } from 'node:fs'

/** The package's version, read once from package.json (same path from src/ and dist/). */
export const PACKAGE_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
