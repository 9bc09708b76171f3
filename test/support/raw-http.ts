import { connect } from 'node:net'

/**
 * Raw bytes on a fresh connection (requests Node's HTTP parser refuses, or that inject()
 * would tidy up); resolves with all the server sent before it closed. Not half-closed: the
 * server would abort a request still in flight. `Connection: close` in the request ends it.
 */
export async function rawRequest (port: number, bytes: string | Buffer): Promise<string> {
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.setTimeout(5000, () => { socket.destroy(new Error('no answer in 5 s')) })
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', reject)
    socket.on('close', () => { resolve(Buffer.concat(chunks).toString('latin1')) })
    socket.write(bytes)
  })
}
