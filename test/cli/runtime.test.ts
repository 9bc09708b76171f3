import t from 'tap'
import { runtimeRefusal } from '../../src/cli/runtime.js'

t.test('Node 24 and 22.12+ are supported; 22.11, 20, 18 are refused with one line naming the Node to use', async (t) => {
  for (const version of ['24.0.0', '24.21.0', '25.1.0', '22.12.0', '22.23.3']) t.equal(runtimeRefusal(version), undefined, version)
  for (const version of ['22.11.0', '20.20.2', '18.20.8', '16.0.0']) {
    const line = runtimeRefusal(version)
    t.match(line, new RegExp(`^Node ${version.replaceAll('.', '\\.')} is not supported: use Node 24`), version)
    t.notMatch(line, /\n/, 'one line')
  }
})

t.test('the machine\'s own Node, when it is older than 22.12: the built CLI refuses to start, exit 1, one line', async (t) => {
  const { execFileSync, spawnSync } = await import('node:child_process')
  let systemVersion: string
  try {
    systemVersion = execFileSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).trim().slice(1)
  } catch {
    t.pass('no /usr/bin/node on this machine: the unit test above covers the rule')
    return
  }
  const cli = new URL('../../dist/cli/main.js', import.meta.url).pathname
  const run = spawnSync('/usr/bin/node', [cli, '--help'], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } })
  if (runtimeRefusal(systemVersion) === undefined) {
    t.equal(run.status, 0, `Node ${systemVersion} is supported: --help runs`)
  } else {
    t.equal(run.status, 1, `Node ${systemVersion}: exit 1`)
    t.equal(run.stdout, '', 'nothing on stdout')
    t.equal(run.stderr.trim().split('\n').length, 1, 'one line on stderr')
    t.match(run.stderr, /use Node 24/)
  }
})
