import t from 'tap'
import { hostAllowed, redirectParameter, safeRedirect } from '../../src/sign-in/redirect.js'

/*
 * The sign-in's `rd`: only this origin or AUTH_REDIRECT_ALLOWED's hosts. The refused
 * list is the open-redirect bypasses that have worked on real sign-in pages (OWASP's unvalidated
 * redirects cheat sheet, PortSwigger's URL-validation bypass list, oauth2-proxy's and Authelia's
 * advisories): each must be ignored, whatever a browser would have made of it.
 */

const OWN = 'https://auth.example.org'
const ALLOWED = ['app.example.org', '.corp.example']

t.test('allowed: own paths and origin, the allowed hosts (any port), a leading-dot rule\'s subdomains and apex', async (t) => {
  const cases: Array<[string, string]> = [
    ['/orders/7?page=2&sort=asc', `${OWN}/orders/7?page=2&sort=asc`],
    ['/', `${OWN}/`],
    ['/%2f%2fevil.example', `${OWN}/%2f%2fevil.example`],
    [`${OWN}/x?y=1#frag`, `${OWN}/x?y=1#frag`],
    ['https://app.example.org/a?b=c', 'https://app.example.org/a?b=c'],
    ['http://app.example.org:8080/', 'http://app.example.org:8080/'],
    ['HTTPS://APP.EXAMPLE.ORG/Path', 'https://app.example.org/Path'],
    ['https://wiki.corp.example/page', 'https://wiki.corp.example/page'],
    ['https://a.b.corp.example/', 'https://a.b.corp.example/'],
    ['https://corp.example/', 'https://corp.example/']
  ]
  for (const [rd, expected] of cases) t.equal(safeRedirect(rd, OWN, ALLOWED), expected, rd)
})

t.test('refused: every known bypass is ignored', async (t) => {
  const bypasses = [
    '//evil.example', '///evil.example', '////evil.example', '/\\evil.example', '\\\\evil.example', '\\/evil.example',
    '/\\/evil.example', 'https:evil.example', 'https:/evil.example', 'http:\\\\evil.example', 'https:\\/\\/evil.example',
    'http://app.example.org@evil.example', 'http://app.example.org:443@evil.example', 'https://user:pw@app.example.org/',
    'http://evil.example#@app.example.org', 'http://evil.example?@app.example.org', 'http://evil.example\\@app.example.org',
    'http://evil.example/app.example.org', 'http://app.example.org.evil.example/', 'http://evilapp.example.org/',
    'http://corp.example.evil.example/', 'http://xcorp.example/', 'https://auth.example.org.evil.example/',
    '%2f%2fevil.example', '%2F%2Fevil.example', '/%09/evil.example'.replace('%09', '\t'), '/\t/evil.example',
    'java\tscript:alert(1)', '\njavascript:alert(1)', 'javascript:alert(1)', 'JaVaScRiPt:alert(1)',
    'javascript://app.example.org/%0aalert(1)', 'data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==',
    'vbscript:msgbox(1)', 'file:///etc/passwd', 'ftp://app.example.org/', 'ws://app.example.org/',
    'http://evil.example\t.app.example.org', 'http://evil.example\r\n.app.example.org', ' https://evil.example', 'https://evil.example ',
    'https://evil。example', 'https://ｅｖｉｌ.example', 'https://аpp.example.org/', 'https://app.example.org\u2025evil.example',
    'https://evil.example\u3002app.example.org', 'http://0x7f000001/', 'http://[::1]/', 'http://127.0.0.1/', 'http://localhost/',
    'evil.example', 'app.example.org', '.evil.example', 'https://', 'http:///app.example.org', 'https://%65vil.example/',
    'http://evil.example%23@app.example.org', 'http:/\\/evil.example', '/.evil.example', '', 'x'.repeat(3000)
  ]
  for (const rd of bypasses) {
    const answer = safeRedirect(rd, OWN, ALLOWED)
    // Either ignored, or (a path of this origin) kept on this origin: never another host.
    if (answer !== undefined) t.equal(new URL(answer).origin, OWN, `${JSON.stringify(rd)} stays on the own origin (${answer})`)
    else t.pass(`${JSON.stringify(rd)} is ignored`)
  }
  t.equal(safeRedirect('/\tx', OWN, ALLOWED), undefined, 'a tab anywhere is refused, not dropped as the URL parser would')
  t.equal(safeRedirect('/x', undefined, ALLOWED), undefined, 'a path needs a known own origin')
  t.equal(safeRedirect('http://evil.example/', OWN, []), undefined, 'no allowed hosts: only the own origin')
})

t.test('hostAllowed: exact names, and a leading dot for a domain and its subdomains', async (t) => {
  t.ok(hostAllowed('app.example.org', ALLOWED))
  t.notOk(hostAllowed('www.app.example.org', ALLOWED), 'an exact name admits no subdomain')
  t.ok(hostAllowed('x.corp.example', ALLOWED))
  t.notOk(hostAllowed('xcorp.example', ALLOWED))
})

t.test('redirectParameter: the gateway\'s unencoded form keeps the original query; the encoded form decodes', async (t) => {
  t.equal(redirectParameter('/auth/signin?rd=http://app.example.org:8080/orders?page=2&sort=asc'), 'http://app.example.org:8080/orders?page=2&sort=asc')
  t.equal(redirectParameter('/auth/signin?rd=/orders?x=1&y=2'), '/orders?x=1&y=2')
  t.equal(redirectParameter('/auth/signin?rd=https%3A%2F%2Fapp.example.org%2Fa%3Fb%3D1%26c%3D2&other=1'), 'https://app.example.org/a?b=1&c=2')
  t.equal(redirectParameter('/auth/signin?x=1&rd=%2Fhome'), '/home')
  t.equal(redirectParameter('/auth/signin?rd=%E0%A4%A'), undefined, 'bad percent-encoding: no rd')
  t.equal(redirectParameter('/auth/signin'), undefined)
  t.equal(redirectParameter('/auth/signin?other=1'), undefined)
})
