// The command line proper, loaded by main.ts once the runtime is known to be one this project supports.
import { loadConfig } from '../config.js'
import { tracingSettings } from '../tracing/settings.js'
import { createAdminApiOperations } from './adapters/admin-api.js'
import { createInProcessOperations } from './adapters/in-process.js'
import { adminRoute } from './admin-route.js'
import { runAccountCommand } from './commands.js'
import { describe, EXIT, Failure } from './exit-codes.js'
import { databaseUsed, requireEmbeddedDatabase } from './database-used.js'
import { runMigrate } from './migrate.js'
import { parseCommandLine, USAGE } from './parse.js'

// Only what every command needs is imported here; the drivers (PGlite, pg, ioredis, ldapts, the
// argon2 binding) are loaded by the commands that use them, so `--help` and a usage error stay cheap.

/** The exit status, or -1 for `serve`, which keeps running until a signal ends it. */
async function run (argv: string[]): Promise<number> {
  const invocation = parseCommandLine(argv)
  if (invocation.command === 'help') {
    process.stdout.write(`${USAGE}\n`)
    return EXIT.success
  }
  const config = loadConfig()
  switch (invocation.command) {
    case 'serve': {
      // Tracing first: its module hooks must be in place before the app imports ioredis and pg.
      // Off (no OTLP endpoint), nothing of OpenTelemetry is loaded (tracing/settings.ts imports none).
      const settings = tracingSettings(process.env)
      const tracing = settings === undefined ? undefined : await (await import('../tracing/start.js')).startTracing(settings)
      const { startServer } = await import('../server.js')
      await startServer(config, { tracing })
      return -1
    }
    case 'migrate':
      return await runMigrate(config)
    default: {
      // A running service is asked through its admin API; else this process opens the database.
      const route = await adminRoute(config)
      if (route !== undefined && 'problem' in route) throw new Failure(route.problem)
      if (route === undefined) requireEmbeddedDatabase(config)
      if (invocation.verbose === true) process.stderr.write(`auth-token-service: using ${databaseUsed(config, route)}\n`)
      const operations = route === undefined ? createInProcessOperations(config, invocation.command) : createAdminApiOperations(route)
      return await runAccountCommand(operations, invocation)
    }
  }
}

try {
  const code = await run(process.argv.slice(2))
  if (code >= 0) process.exitCode = code
} catch (error) {
  const { message, code } = describe(error)
  process.stderr.write(`auth-token-service: ${message}\n`)
  process.exitCode = code
}
