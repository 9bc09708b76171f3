import t from 'tap'
import { describe, EXIT } from '../../src/cli/exit-codes.js'
import { parseCommandLine, USAGE } from '../../src/cli/parse.js'
import { PACKAGE_VERSION } from '../../src/config/version.js'

/*
 * What the command line says when it is given something it cannot run: a usage error in a few
 * lines that name the problem and point at --help (the whole usage is 40 lines; printed on
 * every slip it buried the one line that mattered), exit 2; and --version, --help.
 */

/** What main.ts prints on stderr for `argv`, and its exit status. */
function usageErrorOf (argv: string[]): { stderr: string, code: number } {
  try {
    parseCommandLine(argv)
  } catch (error) {
    const { message, code } = describe(error)
    return { stderr: `auth-token-service: ${message}\n`, code }
  }
  throw new Error(`[${argv.join(' ')}] parsed`)
}

const POINTER = "Run 'auth-token-service --help' for usage."

t.test('--version and --help are commands of their own, whatever else is on the line', async (t) => {
  t.same(parseCommandLine(['--version']), { command: 'version' })
  t.same(parseCommandLine(['user', 'list', '--version']), { command: 'version' })
  t.same(parseCommandLine(['--help']), { command: 'help' })
  t.same(parseCommandLine(['-h']), { command: 'help' })
  t.same(parseCommandLine(['-v', 'user', 'list']), { command: 'user list', verbose: true }, '-v stays --verbose')
  t.match(PACKAGE_VERSION, /^\d+\.\d+\.\d+/, 'the version it prints is the package\'s')
  t.match(USAGE, /--version\s+print the version/, 'the usage lists --version')
})

t.test('a usage error: at most three lines, naming the problem, pointing at --help, exit 2', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['user', 'add', 'bob', '--foo'], /^auth-token-service: unknown option '--foo' for 'user add'\n/],
    [['user', 'list', '--bogus'], /^auth-token-service: unknown option '--bogus' for 'user list'\n/],
    [['--foo'], /^auth-token-service: unknown option '--foo'\n/],
    [['-x', 'events'], /^auth-token-service: unknown option '-x' for 'events'\n/],
    [['keys', 'create', 'svc', '--name'], /^auth-token-service: --name wants a value\n/],
    [['user', 'list', '--verbose=yes'], /^auth-token-service: --verbose takes no value\n/],
    [[], /^auth-token-service: a command is required: serve, migrate, user, sessions, keys, groups or events\n/],
    [['frobnicate'], /^auth-token-service: unknown command: frobnicate\n/],
    [['user', 'add'], /^auth-token-service: user add takes exactly one <username>\n/],
    [['user', 'passwd', 'alice', '--federated'], /^auth-token-service: --federated belongs to `user add`\n/],
    [['migrate', 'extra'], /^auth-token-service: migrate takes no arguments\n/],
    [['groups', 'add', 'alice'], /^auth-token-service: groups add takes exactly <username> <group>\n/],
    [['groups', 'remove', 'alice', 'ops', 'dev'], /^auth-token-service: groups remove takes exactly <username> <group>\n/],
    [['groups', 'list', 'alice', 'bob'], /^auth-token-service: groups list takes at most one <username>\n/],
    [['groups', 'rename'], /^auth-token-service: unknown groups command: rename\n/]
  ]
  for (const [argv, problem] of cases) {
    const { stderr, code } = usageErrorOf(argv)
    const label = `[${argv.join(' ')}]`
    t.equal(code, EXIT.usage, `${label}: exit 2`)
    t.match(stderr, problem, `${label}: names the problem`)
    t.ok(stderr.endsWith(`${POINTER}\n`), `${label}: points at --help`)
    t.ok(stderr.trimEnd().split('\n').length <= 3, `${label}: ${stderr.trimEnd().split('\n').length} lines`)
    t.notMatch(stderr, /usage: auth-token-service <command>|To specify a positional argument/, `${label}: neither the whole usage nor parseArgs' own advice`)
  }
})
