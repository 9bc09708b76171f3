// Fails when an installed package declares that it needs a Node newer than 20, the
// runtime of every machine here (such a package may break on a patch release).
import { readdirSync, readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
const bad = []
function scan (dir) {
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.')) continue
    const p = join(dir, name)
    if (name.startsWith('@')) { scan(p); continue }
    const pj = join(p, 'package.json')
    if (existsSync(pj)) {
      const j = JSON.parse(readFileSync(pj, 'utf8'))
      const e = j.engines?.node
      if (e && /(>=\s*2[2-9]|\^2[2-9]|>=\s*24)/.test(e) && !/20/.test(e)) bad.push(`${j.name}@${j.version} ${e}`)
      if (existsSync(join(p, 'node_modules'))) scan(join(p, 'node_modules'))
    }
  }
}
scan('node_modules')
if (bad.length > 0) {
  console.error(`packages that need a newer Node than 20:\n${bad.join('\n')}`)
  process.exit(1)
}
console.log('all installed packages admit Node 20')
