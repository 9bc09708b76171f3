import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { SETTINGS_PARTS } from './config.js'
import { fillSettings, holdsSettings, REGENERATE } from './docs.js'

// `npm run docs:config`: writes the settings' tables of docs/*.md from the declarations.
// With --check, writes nothing and exits 1 naming each page that differs (what the test asks too).
const docs = new URL('../../docs/', import.meta.url)
const check = process.argv.includes('--check')
let differing = 0
for (const name of readdirSync(docs).filter((file) => file.endsWith('.md')).sort()) {
  const page = readFileSync(new URL(name, docs), 'utf8')
  if (!holdsSettings(page)) continue
  const filled = fillSettings(page, SETTINGS_PARTS)
  if (filled === page) continue
  differing++
  if (check) {
    process.stderr.write(`docs/${name} differs from the settings' declarations (src/config/parts/): run ${REGENERATE}\n`)
  } else {
    writeFileSync(new URL(name, docs), filled)
    process.stdout.write(`docs/${name}: settings written\n`)
  }
}
if (check && differing > 0) process.exitCode = 1
