#!/usr/bin/env node
import { runtimeRefusal } from './runtime.js'

// The runtime first, before anything an older Node may not load (the rest comes by import()).
// npm start, npm test and npx run the project's own Node 24 (node_modules/.bin, first on their
// PATH), so this refusal is met only by `node dist/cli/main.js` under an older system Node.
const refusal = runtimeRefusal(process.versions.node)
if (refusal === undefined) {
  await import('./run.js')
} else {
  process.stderr.write(`auth-token-service: ${refusal}\n`)
  process.exitCode = 1
}
