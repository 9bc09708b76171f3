import neostandard from 'neostandard'

// The layers of src/ (docs/architecture.md): arrows point down only.
//   cli            the command line: an entry, like src/app/server.ts
//   app            composition: the only place that knows every slice
//   <feature>      one folder per feature; another feature only through its index.ts
//   admin metrics  the admin API's frame and the metrics, over the core
//   core           the contract: Login, Authenticate, Logout, accounts, token store, limits
//   http logging tracing passwords db   the edges the core stands on
//   errors config  leaves
const FEATURES = ['api-keys', 'totp', 'sign-in', 'sessions', 'webhooks', 'federation', 'groups', 'oidc', 'console']
const FRAME = ['admin', 'metrics']
const BELOW_CORE = ['http', 'logging', 'tracing', 'passwords', 'db']
const LEAVES = ['errors', 'config']
const dirs = (names) => names.map((name) => `./src/${name}`)
const ALL = ['app', 'cli', ...FEATURES, ...FRAME, 'core', ...BELOW_CORE, ...LEAVES, 'guard', 'client']
const except = (...names) => dirs(ALL.filter((name) => !names.includes(name)))

const layering = [
  { target: except('app', 'cli'), from: dirs(['app', 'cli']), message: 'src/app composes the service and is imported by nothing below it: hand the part what it needs from src/app.' },
  { target: dirs(['core', ...FRAME, ...BELOW_CORE, ...LEAVES]), from: dirs(FEATURES), message: 'A feature is used by src/app (or by another feature, through its index.ts), never by the layers below it: declare what you need as a port in the lower layer.' },
  { target: dirs(['core', ...BELOW_CORE, ...LEAVES]), from: dirs(FRAME), message: 'The admin frame and the metrics stand on the core, not under it.' },
  { target: dirs([...BELOW_CORE, ...LEAVES]), from: dirs(['core']), message: 'The core stands on these layers: they do not import it.' },
  { target: dirs(['errors']), from: except('errors'), message: 'src/errors is a leaf: it imports nothing of the service.' },
  ...FEATURES.flatMap((feature) => FEATURES.filter((other) => other !== feature).map((other) => ({
    target: `./src/${feature}`,
    from: `./src/${other}`,
    except: ['./index.ts'],
    message: `Another feature is used through its index.ts only (src/${other}/index.ts).`
  }))),
  { target: './packages', from: './src', message: 'The packages stand alone: they never import the service.' },
  { target: ['./src', './packages'], from: ['./test', './bench', './support', './examples'], message: 'Nothing in src/ or packages/ imports tests, benchmarks or examples.' }
]

// neostandard: the standard style, for TypeScript (the style the code was written in).
export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'coverage/**', 'node_modules/**', '.tap/**', 'packages/*/dist/**'] }),
  {
    rules: {
      // Loops here wait on flags that callbacks set between awaits (a stop, an exit): the rule
      // cannot see those writes and flags every one.
      'no-unmodified-loop-condition': 'off',
      // A variable that a closure reads before its one assignment cannot be a const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }]
    }
  },
  {
    files: ['**/*.ts'],
    rules: {
      // `_` names a binding that is there only to be counted or skipped.
      '@typescript-eslint/no-unused-vars': ['error', { varsIgnorePattern: '^_', argsIgnorePattern: '^_' }]
    }
  },
  {
    files: ['src/**/*.ts', 'packages/*/src/**/*.ts'],
    // no-cycle follows only the extensions named here: without .ts it sees no module at all.
    settings: { 'import-x/extensions': ['.ts', '.js'] },
    rules: {
      'import-x/no-restricted-paths': ['error', { zones: layering }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // A function longer than a screenful or three stops being something a reader can hold in
      // mind: split it by what it does (a page, a step, a concern), not by line count.
      'max-lines-per-function': ['error', { max: 150, skipBlankLines: false, skipComments: false }]
    }
  }
]
