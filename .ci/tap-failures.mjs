// Reads a tap run's raw TAP output (stdin) and prints each failed assertion with the names of the
// subtests around it and its diagnostics, so that the end of a CI log says what failed: a log
// shown only in part (its last lines) would otherwise hide a `not ok` among 19,000 `ok`s.
import { createInterface } from 'node:readline'

const indentOf = (line) => line.length - line.trimStart().length
const names = [] // { indent, name, failuresBefore } of the subtests open at this point
const failures = []
let block // the diagnostics (YAML) being read: where to put them, and the indent they end at
let pending // a result line's diagnostics, if the next line opens them

for await (const line of createInterface({ input: process.stdin })) {
  const indent = indentOf(line)
  const text = line.trim()
  if (pending !== undefined) {
    const opens = text === '---' && indent === pending.indent + 2
    if (opens) block = pending
    pending = undefined
    if (opens) continue
  }
  if (block !== undefined) {
    if (text === '...' && indent === block.indent + 2) block = undefined
    else if (block.lines !== undefined) block.lines.push(line.slice(block.indent))
    continue
  }
  const subtest = /^# Subtest: (.*)$/.exec(text)
  if (subtest !== null) {
    while (names.length > 0 && names.at(-1).indent >= indent) names.pop()
    names.push({ indent, name: subtest[1], failuresBefore: failures.length })
    continue
  }
  const result = /^(not )?ok \d+ - (.*?)(?: # time=.*)?$/.exec(text)
  if (result === null) {
    if (text === '---' && indent > 0) block = { indent: indent - 2, lines: undefined }
    continue
  }
  // A subtest's own result line closes it; a failed one repeats its children's failures, so it
  // counts only when none of them failed (a file that crashed, a subtest that timed out).
  const own = names.length > 0 && names.at(-1).indent === indent && names.at(-1).name === result[2]
  const closed = own ? names.pop() : undefined
  if (result[1] === undefined || / # (TODO|SKIP)/i.test(text)) continue
  if (closed !== undefined && failures.length > closed.failuresBefore) { pending = { indent, lines: undefined }; continue }
  const failure = { path: names.filter((n) => n.indent < indent).map((n) => n.name), text, lines: [] }
  failures.push(failure)
  pending = { indent, lines: failure.lines }
}

if (failures.length === 0) {
  console.log('(no failed assertion found in the TAP output: a file that crashed or timed out shows as a failed file above)')
} else {
  console.log(`${failures.length} failed assertion(s):`)
  for (const { path, text, lines } of failures) {
    console.log(`\n- ${[...path, text].join(' > ')}`)
    for (const line of lines.slice(0, 40)) console.log(`    ${line}`)
  }
}
