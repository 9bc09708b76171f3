#!/usr/bin/env node
// `npx auth-token-service` in a checkout: this workspace's bin, which npm links into the root's
// node_modules/.bin, so npx runs it at once. As the root package's own bin, npx first loaded the
// whole dependency tree and copied the package into its cache (~/.npm/_npx): 3-4 s before every
// command, and a second checkout could run the first one's copy.
import { existsSync } from 'node:fs'

const main = new URL('../../dist/cli/main.js', import.meta.url)
if (existsSync(main)) {
  await import(main.href)
} else {
  process.stderr.write('auth-token-service: the command is not built yet: run `npm run build` (npm start and npm test build it too)\n')
  process.exitCode = 1
}
