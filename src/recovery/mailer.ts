import { createTransport } from 'nodemailer'
import type { MailMessage } from './messages.js'

/**
 * Sending one message through the configured SMTP server, with nodemailer (never an SMTP client
 * of our own): `smtp://` upgrades with STARTTLS when the server offers it, `smtps://` is TLS
 * from the start. Every step has a time limit (connecting, the greeting, each command), so a
 * server that hangs costs the worker a bounded wait, never a request.
 */
export interface Mailer {
  send (to: string, message: MailMessage): Promise<void>
  close (): void
}

export function createMailer (options: { smtpUrl: string, from: string, timeoutMs: number }): Mailer {
  const transport = createTransport({
    url: options.smtpUrl,
    connectionTimeout: options.timeoutMs,
    greetingTimeout: options.timeoutMs,
    socketTimeout: options.timeoutMs,
    // A message is only what we render: nothing is read from a file or fetched from a URL.
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false
  })
  return {
    async send (to, message) {
      await transport.sendMail({ from: options.from, to, subject: message.subject, text: message.text, html: message.html })
    },
    close () { transport.close() }
  }
}

/**
 * An SMTP error as the outbox and the log keep it: every address's local part (the server's
 * `550 <alice@example.org>: no such user`) replaced, control characters gone, cut short.
 */
export function mailProblem (error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  // eslint-disable-next-line no-control-regex
  return text.replace(/[^\s<>"'(),;:[\]]+@/g, '…@').replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, 300)
}
