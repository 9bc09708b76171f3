import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { Test } from 'tap'
import { SMTPServer } from 'smtp-server'
import { INVITE_TTL_MS, type MailConfig } from '../../src/config/parts/mail.js'
import type { Config } from '../../src/config/config.js'
import { buildTestApp, type TestApp } from '../support/app.js'

/** What the test SMTP server does with a message: take it, refuse its recipient (550), or never greet. */
export type SmtpMode = 'accept' | 'refuse' | 'hang'

export interface ReceivedMail {
  from: string
  to: string[]
  subject: string
  text: string
  html: string
  /** The first link to /auth/reset/… in the text body. */
  link: string
}

export interface TestSmtp {
  url: string
  mode: SmtpMode
  readonly received: ReceivedMail[]
  /** Connections the server saw (a hanging one included). */
  readonly connections: number
  /** Connections that have ended (a hanging one: when the client gave up on it). */
  readonly closed: number
  /** The next message to arrive (or one that arrived and nobody took yet), within `timeoutMs`. */
  next (timeoutMs?: number): Promise<ReceivedMail>
}

function decodeQuotedPrintable (text: string): string {
  const bytes = text.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_all, hex: string) => `%${hex}`)
  // Bytes as %XX, then UTF-8; a lone % that is no escape stays as it is.
  return decodeURIComponent(bytes.replace(/%(?![0-9A-F]{2})/g, '%25'))
}

function decodePart (headers: string, body: string): string {
  const encoding = /content-transfer-encoding:\s*([\w-]+)/i.exec(headers)?.[1]?.toLowerCase()
  if (encoding === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8')
  if (encoding === 'quoted-printable') return decodeQuotedPrintable(body)
  return body
}

function split (raw: string): { headers: string, body: string } {
  const at = raw.indexOf('\r\n\r\n')
  return at < 0 ? { headers: raw, body: '' } : { headers: raw.slice(0, at), body: raw.slice(at + 4) }
}

/** Enough MIME for what nodemailer sends: a multipart/alternative of a text and an HTML part (or one part). */
export function parseMail (raw: string, from: string, to: string[]): ReceivedMail {
  const { headers, body } = split(raw)
  const unfolded = headers.replace(/\r\n[ \t]+/g, ' ')
  const subjectLine = /^subject:\s*(.*)$/im.exec(unfolded)?.[1] ?? ''
  const subject = subjectLine.replace(/=\?utf-8\?Q\?(.*?)\?=/gi, (_all, text: string) => decodeQuotedPrintable(text.replace(/_/g, ' '))).replace(/\?=\s+=\?/g, '')
  const boundary = /boundary="?([^";\r\n]+)"?/i.exec(unfolded)?.[1]
  let text = ''
  let html = ''
  const parts = boundary === undefined ? [raw] : body.split(`--${boundary}`).slice(1, -1)
  for (const part of parts) {
    const piece = split(part.replace(/^\r\n/, ''))
    const decoded = decodePart(piece.headers, piece.body)
    if (/content-type:\s*text\/html/i.test(piece.headers)) html = decoded
    else if (/content-type:\s*text\/plain/i.test(piece.headers)) text = decoded
  }
  const link = /https?:\/\/\S+\/auth\/reset\/[A-Za-z0-9_-]{43}/.exec(text)?.[0] ?? ''
  return { from, to, subject, text, html, link }
}

/** A real SMTP server (the npm smtp-server package) on a free loopback port, closed with the test. */
export async function startSmtp (t: Test, mode: SmtpMode = 'accept'): Promise<TestSmtp> {
  const received: ReceivedMail[] = []
  let taken = 0
  let connections = 0
  let closed = 0
  const waiting: Array<() => void> = []
  const state = { mode }
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onConnect (_session, callback) {
      connections++
      // Never greeting: the client waits for a banner that does not come.
      if (state.mode === 'hang') return
      callback()
    },
    onClose () { closed++ },
    onRcptTo (_address, _session, callback) {
      if (state.mode === 'refuse') {
        callback(Object.assign(new Error('5.1.1 mailbox unavailable'), { responseCode: 550 }))
        return
      }
      callback()
    },
    onData (stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => { chunks.push(chunk) })
      stream.on('end', () => {
        const from = session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address
        received.push(parseMail(Buffer.concat(chunks).toString('utf8'), from, session.envelope.rcptTo.map((rcpt) => rcpt.address)))
        for (const wake of waiting.splice(0)) wake()
        callback()
      })
    }
  })
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  const port = (server.server.address() as AddressInfo).port
  t.teardown(async () => { await new Promise<void>((resolve) => { server.close(() => { resolve() }) }) })
  return {
    url: `smtp://127.0.0.1:${port}`,
    get mode () { return state.mode },
    set mode (value) { state.mode = value },
    received,
    get connections () { return connections },
    get closed () { return closed },
    async next (timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      while (taken >= received.length) {
        if (Date.now() > deadline) throw new Error(`no mail arrived within ${timeoutMs} ms`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()))
          waiting.push(() => { clearTimeout(timer); resolve() })
        })
      }
      const mail = received[taken++]
      if (mail === undefined) throw new Error('no mail')
      return mail
    }
  }
}

export const PUBLIC_URL = 'https://auth.example.org'

/** Mail at test speed: quick polls and retries, a one-second limit per attempt. */
export function testMail (smtpUrl: string, overrides: Partial<MailConfig> = {}): MailConfig {
  return { smtpUrl, from: 'Example Accounts <accounts@example.org>', publicUrl: PUBLIC_URL, resetTtlMs: 1_800_000, inviteTtlMs: INVITE_TTL_MS, timeoutMs: 1000, backoffMs: 50, pollMs: 50, ...overrides }
}

/** Everything the service logs, as one string, for the scans of what must never reach it. */
export interface CapturedLog {
  stream: Writable
  text (): string
}

export function captureLog (): CapturedLog {
  const chunks: string[] = []
  return {
    stream: new Writable({ write (chunk: Buffer | string, _encoding, done) { chunks.push(chunk.toString()); done() } }),
    text: () => chunks.join('')
  }
}

export interface RecoveryApp extends TestApp {
  smtp: TestSmtp
  log: CapturedLog
}

/** The service with mail through a test SMTP server, on Postgres and Redis, its log captured. */
export async function buildRecoveryApp (t: Test, overrides: Partial<Config> = {}, smtpMode: SmtpMode = 'accept'): Promise<RecoveryApp> {
  const smtp = await startSmtp(t, smtpMode)
  const log = captureLog()
  const built = await buildTestApp(t, 'real', {
    mail: testMail(smtp.url),
    totpKey: randomBytes(32),
    maxFailedLogins: 50,
    maxFailedLoginsPerIp: 1000,
    preSignInRequestsPerIp: 1000,
    // Every line the service writes, access lines included: the scans read all of it.
    logLevel: 'debug',
    ...overrides
  }, { logStream: log.stream })
  return { ...built, smtp, log }
}

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

export const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString()

/** POST /auth/reset as a browser's form does. */
export async function askReset (app: FastifyInstance, identifier: string, remoteAddress = '198.51.100.20'): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'POST', url: '/auth/reset', headers: FORM, remoteAddress, payload: form({ identifier }) })
}

/** The path of a mailed link (the test injects it; the host is AUTH_PUBLIC_URL's). */
export const pathOf = (link: string): string => new URL(link).pathname

export async function loginToken (app: FastifyInstance, username: string, password: string): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/auth/Login', headers: FORM, payload: form({ username, password }) })
  const body = res.json<{ status: number, token?: string }>()
  if (body.token === undefined) throw new Error(`login of ${username} failed: ${res.body}`)
  return body.token
}

export async function authenticates (app: FastifyInstance, token: string): Promise<boolean> {
  return (await app.inject({ url: '/auth/Authenticate', headers: { authorization: `Bearer ${token}` } })).statusCode === 200
}
