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

t.test('oidc clients: the options parsed as the commands take them', async (t) => {
  t.same(parseCommandLine(['oidc', 'clients', 'add', 'Grafana', '--redirect-uri', 'https://g.example/a', '--redirect-uri', 'https://g.example/b']), {
    command: 'oidc clients add', name: 'Grafana', redirectUris: ['https://g.example/a', 'https://g.example/b'], postLogoutRedirectUris: [], public: false, backchannelLogoutUri: undefined
  }, '--redirect-uri again for more, in order')
  t.same(parseCommandLine(['oidc', 'clients', 'add', 'cli', '--public', '--redirect-uri', 'http://127.0.0.1/cb', '--post-logout-redirect-uri', 'http://127.0.0.1/bye', '--backchannel-logout-uri', 'http://localhost/bc']), {
    command: 'oidc clients add', name: 'cli', redirectUris: ['http://127.0.0.1/cb'], postLogoutRedirectUris: ['http://127.0.0.1/bye'], public: true, backchannelLogoutUri: 'http://localhost/bc'
  })
  t.same(parseCommandLine(['oidc', 'clients', 'list']), { command: 'oidc clients list' })
  t.same(parseCommandLine(['oidc', 'clients', 'remove', 'dBjftJeZ4CVP-mB92K27uh']), { command: 'oidc clients remove', clientId: 'dBjftJeZ4CVP-mB92K27uh' })
})

t.test('a usage error: at most three lines, naming the problem, pointing at --help, exit 2', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['user', 'add', 'bob', '--foo'], /^auth-token-service: unknown option '--foo' for 'user add'\n/],
    [['user', 'list', '--bogus'], /^auth-token-service: unknown option '--bogus' for 'user list'\n/],
    [['--foo'], /^auth-token-service: unknown option '--foo'\n/],
    [['-x', 'events'], /^auth-token-service: unknown option '-x' for 'events'\n/],
    [['keys', 'create', 'svc', '--name'], /^auth-token-service: --name wants a value\n/],
    [['user', 'list', '--verbose=yes'], /^auth-token-service: --verbose takes no value\n/],
    [[], /^auth-token-service: a command is required: serve, migrate, user, sessions, keys, groups, events or oidc\n/],
    [['frobnicate'], /^auth-token-service: unknown command: frobnicate\n/],
    [['user', 'add'], /^auth-token-service: user add takes exactly one <username>\n/],
    [['user', 'passwd', 'alice', '--federated'], /^auth-token-service: --federated belongs to `user add`\n/],
    [['migrate', 'extra'], /^auth-token-service: migrate takes no arguments\n/],
    [['groups', 'add', 'alice'], /^auth-token-service: groups add takes exactly <username> <group>\n/],
    [['groups', 'remove', 'alice', 'ops', 'dev'], /^auth-token-service: groups remove takes exactly <username> <group>\n/],
    [['groups', 'list', 'alice', 'bob'], /^auth-token-service: groups list takes at most one <username>\n/],
    [['groups', 'rename'], /^auth-token-service: unknown groups command: rename\n/],
    [['oidc', 'clients', 'add', 'x', '--redirect-uri', 'https://a.example/cb', '--bogus'], /^auth-token-service: unknown option '--bogus' for 'oidc clients add'\n/],
    [['oidc', 'clients', 'add', 'x'], /^auth-token-service: oidc clients add wants --redirect-uri URL \(one or more\)\n/],
    [['oidc', 'clients', 'add', '--redirect-uri', 'https://a.example/cb'], /^auth-token-service: oidc clients add takes exactly one NAME\n/],
    [['oidc', 'clients', 'list', '--public'], /^auth-token-service: --redirect-uri, --post-logout-redirect-uri, --backchannel-logout-uri and --public belong to `oidc clients add`\n/],
    [['keys', 'list', 'svc', '--redirect-uri', 'https://a.example/cb'], /belong to `oidc clients add`\n/],
    [['oidc', 'clients', 'remove'], /^auth-token-service: oidc clients remove takes exactly one CLIENT_ID\n/],
    [['oidc', 'clients', 'list', 'extra'], /^auth-token-service: oidc clients list takes no arguments\n/],
    [['oidc', 'keys'], /^auth-token-service: unknown oidc command: keys\n/],
    [['oidc', 'clients', 'rename'], /^auth-token-service: unknown oidc clients command: rename\n/]
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
