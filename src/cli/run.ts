// The command line proper, loaded by main.ts once the runtime is known to be one this project supports.
import { PACKAGE_VERSION } from '../config/version.js'
import { EXIT, parseCommandLine, USAGE, UsageError, usageErrorText } from './parse.js'

// Only the parser is imported before the command line is known to be good: --help, --version and
// a usage error load nothing else. The rest comes by import() once a command runs, and each
// command loads only its own part; the drivers (PGlite, pg, ioredis, ldapts, the argon2 binding)
// come with the commands that open a database. An account command sent to a running service
// loads none of them, nor Fastify.

/** The exit status, or -1 for `serve`, which keeps running until a signal ends it. */
async function run (argv: string[]): Promise<number> {
  const invocation = parseCommandLine(argv)
  if (invocation.command === 'help') {
    process.stdout.write(`${USAGE}\n`)
    return EXIT.success
  }
  if (invocation.command === 'version') {
    process.stdout.write(`${PACKAGE_VERSION}\n`)
    return EXIT.success
  }
  const { loadConfig } = await import('../config/config.js')
  const config = loadConfig()
  switch (invocation.command) {
    case 'serve': {
      // Tracing first: its module hooks must be in place before the app imports ioredis and pg.
      // Off (no OTLP endpoint), nothing of OpenTelemetry is loaded (tracing/settings.ts imports none).
      const { tracingSettings } = await import('../tracing/settings.js')
      const settings = tracingSettings(process.env)
      const tracing = settings === undefined ? undefined : await (await import('../tracing/start.js')).startTracing(settings)
      const { startServer } = await import('../app/server.js')
      await startServer(config, { tracing })
      return -1
    }
    case 'migrate':
      return await (await import('./migrate.js')).runMigrate(config)
    default: {
      const [{ adminRoute }, { Failure }, { databaseUsed, requireEmbeddedDatabase }, { runAccountCommand }] = await Promise.all([
        import('./admin-route.js'), import('./exit-codes.js'), import('./database-used.js'), import('./commands.js')
      ])
      // A running service is asked through its admin API; else this process opens the database.
      const route = await adminRoute(config)
      if (route !== undefined && 'problem' in route) throw new Failure(route.problem)
      if (route === undefined) requireEmbeddedDatabase(config)
      if (invocation.verbose === true) process.stderr.write(`auth-token-service: using ${databaseUsed(config, route)}\n`)
      const operations = route === undefined
        ? (await import('./adapters/in-process.js')).createInProcessOperations(config, invocation.command)
        : (await import('./adapters/admin-api.js')).createAdminApiOperations(route)
      return await runAccountCommand(operations, invocation)
    }
  }
}

try {
  const code = await run(process.argv.slice(2))
  if (code >= 0) process.exitCode = code
} catch (error) {
  // A usage error is told without loading what every other failure's description needs.
  const { message, code } = error instanceof UsageError
    ? { message: usageErrorText(error), code: EXIT.usage }
    : (await import('./exit-codes.js')).describe(error)
  process.stderr.write(`auth-token-service: ${message}\n`)
  process.exitCode = code
}
