import type { Span, SpanProcessor } from '@opentelemetry/sdk-trace-node'

/**
 * Drops what may quote a secret from every span before it is exported: the status message
 * (kept: the status code) and the message and stack of exception events (kept: the type).
 */
export class ScrubErrorText implements SpanProcessor {
  onStart (): void {}
  onEnding (span: Span): void {
    if (span.status.message !== undefined) span.setStatus({ code: span.status.code })
    for (const event of span.events) {
      if (event.name === 'exception' && event.attributes !== undefined) {
        const type = event.attributes['exception.type']
        event.attributes = type === undefined ? {} : { 'exception.type': type }
      }
    }
  }

  onEnd (): void {}
  async forceFlush (): Promise<void> {}
  async shutdown (): Promise<void> {}
}
