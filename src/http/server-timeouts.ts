/**
 * Node's options for how long a client may take to send a request. Node enforces its request
 * and header timeouts only when it checks its connections, every `connectionsCheckingInterval`
 * (30 s by default), and takes its header timeout (60 s) from the options the server is created
 * with, before Fastify sets the request timeout: a client sending one header line a second was
 * answered 408 only after 24 s for a 10 s AUTH_REQUEST_TIMEOUT_MS. Checked twice a second, both
 * at the configured value, the timeout holds to within half a second.
 */
export interface ServerTimeouts {
  requestTimeout: number
  headersTimeout: number
  connectionsCheckingInterval: number
}

/** How often Node checks its connections' timeouts, at most. */
const CHECK_INTERVAL_MS = 500

export function serverTimeouts (requestTimeoutMs: number): ServerTimeouts {
  return { requestTimeout: requestTimeoutMs, headersTimeout: requestTimeoutMs, connectionsCheckingInterval: Math.min(CHECK_INTERVAL_MS, requestTimeoutMs) }
}
