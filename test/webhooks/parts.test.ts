import t from 'tap'
import { Webhook } from 'standardwebhooks'
import { loadConfig } from '../../src/config/config.js'
import { backoffDelay } from '../../src/webhooks/deliverer.js'
import { clientNetwork, createSqlDeviceRecord, userAgentFamily } from '../../src/webhooks/devices.js'
import { decodeWebhookSecret } from '../../src/config/parts/webhooks.js'
import { signWebhook } from '../../src/webhooks/signature.js'
import { WEBHOOK_EVENT_TYPES, webhookMessage } from '../../src/core/events.js'
import { freshPglite } from '../support/pglite.js'
import { CHROME, FIREFOX, newWebhookSecret } from './support.js'

t.test('signatures are the ones the standardwebhooks library makes and accepts', async (t) => {
  const secret = newWebhookSecret()
  const decoded = decodeWebhookSecret(secret)
  if (!decoded.ok) throw new Error(decoded.problem)
  const body = '{"type":"logout","timestamp":"2026-11-27T08:00:00.000Z","data":{}}'
  const now = Date.now()
  const headers = signWebhook(decoded.key, 'msg_abc', body, now)
  const library = new Webhook(secret)
  t.equal(headers['webhook-signature'], library.sign('msg_abc', new Date(Math.floor(now / 1000) * 1000), body))
  t.same(library.verify(body, { ...headers }), JSON.parse(body))
  t.throws(() => library.verify(body.replace('logout', 'login'), { ...headers }), 'a changed body is refused')
  t.match(decodeWebhookSecret('secret'), { ok: false, problem: /whsec_/ })
  t.match(decodeWebhookSecret('whsec_c2hvcnQ='), { ok: false, problem: /24 to 64 bytes/ })
  t.match(decodeWebhookSecret('whsec_not base64!'), { ok: false })
})

t.test('backoff doubles from the base, with jitter between half and all, capped', async (t) => {
  t.equal(backoffDelay(1, 1000, 60_000, () => 0), 500)
  t.equal(backoffDelay(1, 1000, 60_000, () => 1), 1000)
  t.equal(backoffDelay(4, 1000, 60_000, () => 1), 8000)
  t.equal(backoffDelay(40, 1000, 60_000, () => 1), 60_000)
  t.equal(backoffDelay(40, 1000, 60_000, () => 0), 30_000)
  // 24 hours of retries at the defaults (5 s doubling to 1 h): about 30 attempts, none lost to overflow.
  let elapsed = 0
  let attempts = 0
  while (elapsed < 86_400_000) elapsed += backoffDelay(++attempts, 5000, 3_600_000, () => 0.5)
  t.ok(attempts > 25 && attempts < 50, `${attempts} attempts in the first 24 h`)
})

t.test('a device is a user-agent family and a /24 or /64 network', async (t) => {
  t.equal(userAgentFamily(FIREFOX), 'Firefox')
  t.equal(userAgentFamily(CHROME), 'Chrome')
  t.equal(userAgentFamily(`${CHROME} Edg/130.0.0.0`), 'Edge')
  t.equal(userAgentFamily('Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15'), 'Safari')
  t.equal(userAgentFamily('curl/8.5.0'), 'curl')
  t.equal(userAgentFamily(undefined), 'unknown')
  t.equal(userAgentFamily('  '), 'unknown')
  t.equal(userAgentFamily('!!'), 'other')
  t.equal(clientNetwork('203.0.113.77'), '203.0.113.0/24')
  t.equal(clientNetwork('::ffff:203.0.113.77'), '203.0.113.0/24')
  t.equal(clientNetwork('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64')
  t.equal(clientNetwork('2001:db8::1'), '2001:db8:0:0::/64')
  t.equal(clientNetwork('::1'), '0:0:0:0::/64')
  t.equal(clientNetwork('fe80::1%eth0'), 'fe80:0:0:0::/64')
})

t.test('the device record: the first Login is no new device; a new pair is; a pair seen 90 days ago is again', async (t) => {
  const db = await freshPglite()
  t.teardown(async () => { await db.close() })
  const devices = createSqlDeviceRecord(db)
  const firefox = { userAgentFamily: 'Firefox', network: '203.0.113.0/24' }
  const chrome = { userAgentFamily: 'Chrome', network: '203.0.113.0/24' }
  t.equal(await devices.seen('1', firefox), false, 'the account\'s first')
  t.equal(await devices.seen('1', firefox), false, 'known')
  t.equal(await devices.seen('1', chrome), true, 'another browser')
  t.equal(await devices.seen('1', { ...chrome, network: '198.51.100.0/24' }), true, 'another network')
  t.equal(await devices.seen('2', chrome), false, 'another account\'s first')
  await db.query("UPDATE login_devices SET last_seen = now() - interval '91 days' WHERE account_id = 1 AND device LIKE 'Chrome 203%'")
  t.equal(await devices.seen('1', chrome), true, 'not used in the last 90 days')
  await db.query("UPDATE login_devices SET last_seen = now() - interval '91 days' WHERE account_id = 1")
  t.equal(await devices.seen('1', firefox), false, 'nothing recent to compare with: as a first Login')
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM login_devices WHERE account_id = 1')
  t.equal(rows[0]?.n, 1, 'older pairs pruned from the record')
})

t.test('the catalogue and the message body', async (t) => {
  t.equal(WEBHOOK_EVENT_TYPES.length, 19)
  t.equal(webhookMessage({ event: 'user.add', outcome: 'created' }, new Date()), undefined, 'not every audit event is sent')
  const message = webhookMessage({ event: 'login.lockout', username: 'bob', accountId: '7', clientIp: '192.0.2.1', userAgent: 'curl/8', outcome: 'locked-60s' }, new Date('2026-11-27T08:00:00Z'))
  t.same(JSON.parse(message?.body ?? '{}'), {
    type: 'account.locked',
    timestamp: '2026-11-27T08:00:00.000Z',
    data: { account_id: '7', username: 'bob', client_ip: '192.0.2.1', user_agent: 'curl/8', outcome: 'locked-60s' }
  })
  const authorized = webhookMessage({ event: 'oidc.authorized', username: 'alice', accountId: '42', outcome: 'code:app1', clientId: 'app1' }, new Date('2026-11-27T08:00:00Z'))
  t.same(JSON.parse(authorized?.body ?? '{}').data, { account_id: '42', username: 'alice', client_ip: null, user_agent: null, outcome: 'code:app1', client_id: 'app1' }, 'an authorization names its client')
})

t.test('configuration: URLs and secret together, each checked', async (t) => {
  const secret = newWebhookSecret()
  const config = loadConfig({ AUTH_WEBHOOK_URL: 'http://127.0.0.1:9000/a, https://hooks.example.org/b', AUTH_WEBHOOK_SECRET: secret })
  t.same(config.webhooks?.urls, ['http://127.0.0.1:9000/a', 'https://hooks.example.org/b'])
  t.same(config.webhooks?.key, Buffer.from(secret.slice('whsec_'.length), 'base64'), 'the secret is decoded once, where it is read')
  t.equal(config.webhooks?.timeoutMs, 10_000)
  t.equal(config.webhooks?.retryWindowMs, 86_400_000)
  t.equal(loadConfig({}).webhooks, undefined)
  t.throws(() => loadConfig({ AUTH_WEBHOOK_URL: 'http://127.0.0.1:9000/a' }), /AUTH_WEBHOOK_SECRET/)
  t.throws(() => loadConfig({ AUTH_WEBHOOK_SECRET: secret }), /AUTH_WEBHOOK_URL/)
  t.throws(() => loadConfig({ AUTH_WEBHOOK_URL: 'ftp://x/', AUTH_WEBHOOK_SECRET: secret }), /AUTH_WEBHOOK_URL/)
  t.throws(() => loadConfig({ AUTH_WEBHOOK_URL: 'http://a/,http://a/', AUTH_WEBHOOK_SECRET: secret }), /twice/)
  t.throws(() => loadConfig({ AUTH_WEBHOOK_URL: 'http://a/', AUTH_WEBHOOK_SECRET: 'whsec_short' }), /AUTH_WEBHOOK_SECRET/)
  t.throws(() => loadConfig({ AUTH_WEBHOOK_URL: 'http://a/', AUTH_WEBHOOK_SECRET: secret, AUTH_WEBHOOK_RETRY_HOURS: '2' }), /AUTH_WEBHOOK_RETRY_HOURS/)
})
