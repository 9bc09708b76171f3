import t from 'tap'
import { getPage, setUp } from './support.js'

/*
 * The dashboard's Logins per hour come from the audit trail, counted by the store that owns it:
 * the last 24 hours, each hour once (zeros filled in), older ones left out.
 */

const HOUR = 3_600_000

t.test('Logins per hour: the last 24 hours from the audit trail, successes and failures apart', async (t) => {
  const { app, admin, testApp } = await setUp(t)
  const now = Date.now()
  const at = (hoursAgo: number): string => new Date(now - hoursAgo * HOUR).toISOString()
  // Rows of earlier hours, as the audit log writes them (the table is append-only: inserts only).
  for (const [hoursAgo, event] of [[3, 'login.success'], [3, 'login.success'], [3, 'login.failure'], [30, 'login.success'], [5, 'logout']] as const) {
    await testApp.database.query('INSERT INTO auth_events (occurred_at, event, username, outcome) VALUES ($1, $2, $3, $4)', [at(hoursAgo), event, 'alice', 'x'])
  }
  const found = await app.backends.audit.loginsPerHour(new Date(now - 23 * HOUR))
  const threeAgo = Math.floor((now - 3 * HOUR) / HOUR) * HOUR
  t.match(found.find((bucket) => bucket.hour.getTime() === threeAgo), { successes: 2, failures: 1 })
  t.notOk(found.some((bucket) => bucket.hour.getTime() < now - 24 * HOUR), 'nothing older than the day')

  const page = await getPage(app, '/console', admin)
  const hh = String(new Date(threeAgo).getUTCHours()).padStart(2, '0')
  t.match(page.body, new RegExp(`<tr><th scope="row">${hh}:00</th><td>2</td><td>1</td></tr>`), 'the table row of that hour')
  t.match(page.body, /id="logins-ok">4</, 'two then, root and alice now; the row 30 hours ago left out')
  t.match(page.body, /id="logins-failed">1</)
})
