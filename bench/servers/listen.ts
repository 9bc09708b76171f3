import type { FastifyInstance } from 'fastify'

/**
 * Every bench server listens on 127.0.0.1 at the port the bench picked (BENCH_PORT) and
 * closes on SIGTERM, so the bench can stop it like the service.
 */
export async function listen (app: FastifyInstance, onClose: () => Promise<void> = async () => {}): Promise<void> {
  const port = Number(process.env.BENCH_PORT)
  if (!Number.isInteger(port) || port <= 0) throw new Error('BENCH_PORT must name the port to listen on')
  const stop = (): void => {
    app.close().then(onClose).then(() => process.exit(0), () => process.exit(1))
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  await app.listen({ host: '127.0.0.1', port })
}

export function requiredEnv (name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`${name} must be set`)
  return value
}
