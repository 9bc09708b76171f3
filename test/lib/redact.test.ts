import t from 'tap'
import { redactUrl } from '../../src/lib/redact.js'

t.test('secrets in paths and queries are replaced', async (t) => {
  t.equal(redactUrl('/auth/Login/ann/hunter2'), '/auth/Login/[redacted]')
  t.equal(redactUrl('/auth/Authenticate/TOKEN123?format=json'), '/auth/Authenticate/[redacted]?format=json')
  t.equal(redactUrl('/auth/Logout/TOKEN123/'), '/auth/Logout/[redacted]')
  t.equal(redactUrl('/auth/Login?username=ann&password=hunter2'), '/auth/Login?username=ann&password=[redacted]')
  t.equal(redactUrl('/auth/Authenticate?token=TOKEN123&callback=cb'), '/auth/Authenticate?token=[redacted]&callback=cb')
  t.equal(redactUrl('/x?pass%77ord=hunter2'), '/x?pass%77ord=[redacted]', 'encoded names too')
  t.equal(redactUrl('//auth//Login/ann/hunter2'), '//auth//Login/[redacted]')
  t.equal(redactUrl('/auth/Login'), '/auth/Login')
})

t.test('control characters are escaped', async (t) => {
  t.equal(redactUrl('/x\r\ninjected'), '/x\\u000d\\u000ainjected')
})
