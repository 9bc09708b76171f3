/** A doorbell between the audit log, which writes outbox rows, and the delivery worker, which sends them. */
export interface OutboxSignal {
  /** Rings (a no-op while nobody listens). Safe to pass around unbound. */
  readonly notify: () => void
  /** The one listener (the worker of this instance); undefined stops listening. */
  listen (listener: (() => void) | undefined): void
}

export function createOutboxSignal (): OutboxSignal {
  let current: (() => void) | undefined
  return {
    notify: () => { current?.() },
    listen (listener) { current = listener }
  }
}
