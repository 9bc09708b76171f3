import { Agent as HttpAgent, request as httpRequest } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'

/**
 * One POST of a JSON body, answered by its status code: node:http with keep-alive agents rather
 * than fetch, which cost the Login benchmark several times the CPU per delivery. The body of the
 * answer is read and dropped; redirects are not followed.
 */
export interface Poster {
  post (url: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<number>
  close (): void
}

export function createPoster (): Poster {
  // A few sockets per receiver, kept between deliveries: a receiver on TLS pays its handshake once.
  const agents = { http: new HttpAgent({ keepAlive: true, maxSockets: 16 }), https: new HttpsAgent({ keepAlive: true, maxSockets: 16 }) }
  return {
    async post (url, headers, body, signal) {
      const target = new URL(url)
      const secure = target.protocol === 'https:'
      return await new Promise<number>((resolve, reject) => {
        const request = (secure ? httpsRequest : httpRequest)(target, {
          method: 'POST',
          agent: secure ? agents.https : agents.http,
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          signal
        }, (response) => {
          response.resume()
          response.once('end', () => { resolve(response.statusCode ?? 0) })
          response.once('error', reject)
        })
        request.once('error', reject)
        request.end(body)
      })
    },
    close () {
      agents.http.destroy()
      agents.https.destroy()
    }
  }
}
