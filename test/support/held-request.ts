import { connect } from 'node:net'

/** A Login whose body is held back: in flight at the service until `finish()` sends it. */
export interface HeldLogin {
  /** Sends the body; resolves with the status and body of the answer ('' and 0 when the connection ended without one). */
  finish (): Promise<{ status: number, body: string }>
}

/**
 * Opens a Login on a fresh connection and sends its headers only, with `Expect: 100-continue`:
 * Node's HTTP server answers "100 Continue" once it has parsed them and handed the request to
 * the app, so when this resolves the request is surely in flight there (not idle, not waiting in
 * the accept queue), and stays so until `finish()`: a request in flight at a signal, without
 * guessing how long a Login takes.
 */
export async function holdLogin (port: number, username: string, password: string): Promise<HeldLogin> {
  const body = new URLSearchParams({ username, password }).toString()
  const socket = connect(port, '127.0.0.1')
  let received = ''
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => { received += chunk })
  const ended = new Promise<void>((resolve) => {
    socket.once('close', () => { resolve() })
    socket.once('error', () => { /* reported as no answer */ })
  })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no 100 Continue in 10 s: ${received}`)) }, 10_000)
    const check = (): void => {
      if (!received.startsWith('HTTP/1.1 100')) return
      clearTimeout(timer)
      socket.off('data', check)
      resolve()
    }
    socket.on('data', check)
    socket.once('close', () => { clearTimeout(timer); reject(new Error(`closed before 100 Continue: ${received}`)) })
    socket.write('POST /auth/Login HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nExpect: 100-continue\r\n' +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`)
  })
  return {
    async finish () {
      if (!socket.destroyed) socket.write(body)
      await ended
      const answer = received.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)
      const at = answer.indexOf('\r\n\r\n')
      return { status, body: at === -1 ? '' : answer.slice(at + 4) }
    }
  }
}
