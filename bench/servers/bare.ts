import Fastify from 'fastify'
import { listen } from './listen.js'

/** Baseline: what Fastify costs with nothing to do (a small JSON object, no logger, no hooks). */
const app = Fastify({ logger: false })
app.get('/', async () => ({ status: 0, message: 'Success' }))
await listen(app)
