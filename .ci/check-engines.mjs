// Fails when an installed package declares (in engines.node) that it does not run on a
// runtime this project supports: Node 22 and 24 (docs/development.md's support table), or on the
// Node running this check (CI runs it on 24 and on 22). Such a
// package may work today and break on a patch release: pin an older one, or drop the runtime
// from the table first. Ranges are compared with semver, as npm compares them.
import { readdirSync, readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import semver from 'semver'

// The first release of each supported line that must work: 22.12 because the test toolchain
// (tap's c8, yargs) needs it already; package.json's engines say the same.
const SUPPORTED = ['22.12.0', '24.0.0']
const running = process.version.slice(1)

/** What a range rules out, or undefined when it admits every supported runtime. */
function refusal (range) {
  if (!semver.validRange(range)) return undefined // npm ignores what it cannot parse
  const refused = SUPPORTED.filter((version) => !semver.satisfies(version, range))
  if (!semver.satisfies(running, range)) refused.push(`${running} (running)`)
  return refused.length === 0 ? undefined : `not on ${refused.join(', ')}`
}

const bad = []
function scan (dir) {
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.')) continue
    const p = join(dir, name)
    if (name.startsWith('@')) { scan(p); continue }
    const pj = join(p, 'package.json')
    if (existsSync(pj)) {
      const j = JSON.parse(readFileSync(pj, 'utf8'))
      const range = j.engines?.node
      const why = typeof range === 'string' ? refusal(range) : undefined
      if (why !== undefined) bad.push(`${j.name}@${j.version} engines.node "${range}": ${why}`)
      if (existsSync(join(p, 'node_modules'))) scan(join(p, 'node_modules'))
    }
  }
}
scan('node_modules')
if (bad.length > 0) {
  console.error(`packages that refuse a supported runtime (${SUPPORTED.join(', ')}, ${running}):\n${bad.join('\n')}`)
  process.exit(1)
}
console.log(`all installed packages admit Node ${SUPPORTED.join(', ')} and ${running}`)
