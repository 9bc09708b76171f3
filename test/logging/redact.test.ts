import t from 'tap'
import { redactUrl } from '@auth-token-service/protocol/redact'

t.test('secrets in paths and queries are replaced', async (t) => {
  t.equal(redactUrl('/auth/Login/ann/hunter2', '/auth/Login/:username/:password'), '/auth/Login/:username/:password', 'a matched route: its template')
  t.equal(redactUrl('/%61uth/%4Cogin/ann/hunter2', '/auth/Login/:username/:password'), '/auth/Login/:username/:password', 'however the path was encoded')
  t.equal(redactUrl('/auth/Authenticate/TOKEN123?format=json', '/auth/Authenticate/:token'), '/auth/Authenticate/:token?format=json')
  t.equal(redactUrl('/auth/Logout/TOKEN123/'), '/auth/[redacted]', 'unmatched: the first segment only')
  t.equal(redactUrl('/auth/Login%2Fu%2Fp'), '/auth/[redacted]')
  t.equal(redactUrl('/auth/Login?username=ann&password=hunter2', '/auth/Login'), '/auth/Login?username=ann&password=[redacted]')
  t.equal(redactUrl('/auth/Authenticate?token=TOKEN123&callback=cb', '/auth/Authenticate'), '/auth/Authenticate?token=[redacted]&callback=cb')
  t.equal(redactUrl('/x?pass%77ord=hunter2'), '/x?pass%77ord=[redacted]', 'encoded names too')
  t.equal(redactUrl('/auth/Password?current_password=old&new_password=new', '/auth/Password'), '/auth/Password?current_password=[redacted]&new_password=[redacted]',
    'the password change\'s two, though it never reads them from the query string')
  t.equal(redactUrl('/auth/Login', '/auth/Login'), '/auth/Login')
  t.equal(redactUrl('/nothing'), '/nothing')
  t.equal(redactUrl('/%2Fauth%2FLogin%2Fu%2Fp'), '/[redacted]', 'an encoded first segment is not logged')
  t.equal(redactUrl('/auth/signin?rd=https://app.example.org/p?token=TOKEN123', '/auth/signin'), '/auth/signin?rd=[redacted]',
    'the sign-in\'s way back, as a gateway sends it: the app\'s URL and its ?token= with it')
  t.equal(redactUrl('/auth/signin?rd=https://app.example.org/p?a=1&token=TOKEN123', '/auth/signin'), '/auth/signin?rd=[redacted]&token=[redacted]')
  t.equal(redactUrl('/auth/signin?rd=https%3A%2F%2Fapp%2Fp%3Ftoken%3DTOKEN123', '/auth/signin'), '/auth/signin?rd=[redacted]', 'encoded too')
})

t.test('control characters are escaped', async (t) => {
  t.equal(redactUrl('/x\r\ninjected'), '/x\\u000d\\u000ainjected')
  t.equal(redactUrl('/x\u2028y'), '/x\\u2028y')
})

t.test('a second factor\'s otp and code are redacted like passwords', async (t) => {
  t.equal(redactUrl('/auth/Login?username=a&password=p&otp=123456', '/auth/Login'), '/auth/Login?username=a&password=[redacted]&otp=[redacted]')
  t.equal(redactUrl('/auth/totp/confirm?code=ABCD-EFGH-IJKL-MNOP', '/auth/totp/confirm'), '/auth/totp/confirm?code=[redacted]')
  t.equal(redactUrl('/auth/Login?%4FTP=123456', '/auth/Login'), '/auth/Login?%4FTP=[redacted]', 'however the name is encoded')
})

t.test('query pieces: empty, without a value, repeated', async (t) => {
  t.equal(redactUrl('/x?', '/x'), '/x?', 'an empty query')
  t.equal(redactUrl('/x?a=1&&b=2&', '/x'), '/x?a=1&&b=2&', 'empty pieces kept')
  t.equal(redactUrl('/x?token&a', '/x'), '/x?token=[redacted]&a', 'a secret name without a value')
  t.equal(redactUrl('/x?a=b=c&token=t=u', '/x'), '/x?a=b=c&token=[redacted]', 'an = in a value')
  t.equal(redactUrl('/x?a&token=t', '/x'), '/x?a&token=[redacted]', 'the = of a later piece is not the first piece\'s')
  t.equal(redactUrl('/x?Token=1&TOKEN=2', '/x'), '/x?Token=[redacted]&TOKEN=[redacted]', 'any case, each time')
})
