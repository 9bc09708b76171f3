/**
 * The far end of a logging server's stdout, as a container runtime or `… | cat` keeps it: a
 * process of its own that reads the pipe as fast as it is scheduled and discards what it
 * reads. The bench stops it (SIGSTOP) and resumes it (SIGCONT) to play a log collector that
 * falls behind, and reads how much it took from /proc/<pid>/io. At the end of the pipe (the
 * server exited) it prints what it received to stderr, one JSON line.
 */
let bytes = 0
let lines = 0
process.stdin.on('data', (chunk: Buffer) => {
  bytes += chunk.length
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++
})
process.stdin.on('end', () => {
  process.stderr.write(`${JSON.stringify({ bytes, lines })}\n`)
})
