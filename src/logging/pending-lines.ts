import { jsonText, type LogBase } from './access-log.js'

/**
 * The whole lines a batched destination (log-destination.ts) has not handed to write(2) yet,
 * bounded, and the count of those it dropped. Full batches of LOG_FLUSH_BYTES, oldest first, then
 * the batch being filled, then (first of all) what write(2) has not taken yet of the batch handed
 * to it. Kept in batches so that a backlog is encoded a batch at a time: encoding a 4 MiB backlog
 * at once took 45 ms of the event loop when the reader came back.
 */

function countLines (buffer: Buffer): number {
  let lines = 0
  for (let at = buffer.indexOf(10); at !== -1; at = buffer.indexOf(10, at + 1)) lines++
  return lines
}

export class PendingLines {
  private readonly batches: Array<{ text: string, lines: number }> = []
  private queued = ''
  private queuedLines = 0
  /** What write(2) has not taken yet of the batch handed to it: it goes first. */
  private head: Buffer | undefined
  /** Characters of the batches plus bytes in `head`: what the bound applies to. */
  private buffered = 0
  /** Lines dropped since the last line that said so; all of them since start. */
  private lost = 0
  private droppedTotal = 0
  private readonly noticeHead = '{"level":40,"time":'
  private readonly noticeTail: string

  /**
   * `batchBytes`: a batch this long is full. `maxBuffered`: the bound, in characters of the
   * waiting lines (bytes, for the usual ASCII line). `base`: pid and hostname for the line that
   * says how many were lost.
   */
  private readonly batchBytes: number
  private maxBuffered: number

  constructor (batchBytes: number, maxBuffered: number, base: LogBase) {
    this.batchBytes = batchBytes
    this.maxBuffered = maxBuffered
    this.noticeTail = `,"pid":${base.pid},"hostname":${jsonText(base.hostname)},"dropped":`
  }

  /** Takes a whole line, after the line saying how many were lost before it; false when it does not fit (dropped and counted). */
  add (line: string): boolean {
    if (this.buffered + line.length > this.maxBuffered) {
      this.drop(1)
      return false
    }
    if (this.lost > 0) this.sayLost()
    this.enqueue(line)
    return true
  }

  /** Lines fit again: the next one says how many were lost, in the place they were. */
  sayLost (): void {
    if (this.lost === 0) return
    this.enqueue(`${this.noticeHead}${Date.now()}${this.noticeTail}${this.lost},"msg":"log lines dropped"}\n`)
    this.lost = 0
  }

  /** A full batch waits: written at once rather than after a while. */
  hasFullBatch (): boolean {
    return this.batches.length > 0
  }

  /** Nothing waits but, perhaps, the rest of a batch write(2) took part of. */
  queueEmpty (): boolean {
    return this.batches.length === 0 && this.queued === ''
  }

  /** The rest of the batch write(2) took part of, if any. */
  current (): Buffer | undefined {
    return this.head
  }

  /** The oldest batch of whole lines, encoded for write(2), taken out of the queue (undefined when there is none). */
  startBatch (): Buffer | undefined {
    const batch = this.nextBatch()
    if (batch === undefined) return undefined
    this.head = Buffer.from(batch)
    this.buffered += this.head.length - batch.length
    return this.head
  }

  /** write(2) took `bytes` of the current batch. */
  taken (bytes: number): void {
    const head = this.head
    if (head === undefined) return
    this.buffered -= bytes
    if (bytes < head.length) {
      this.head = head.subarray(bytes)
      return
    }
    this.head = undefined
    if (this.lost > 0) this.sayLost()
  }

  /** The file descriptor failed for good (EPIPE: the reader is gone; EBADF): what waits cannot be written. */
  dropAll (): void {
    this.drop(this.batches.reduce((lines, batch) => lines + batch.lines, this.queuedLines) + (this.head === undefined ? 0 : countLines(this.head)))
    this.batches.length = 0
    this.queued = ''
    this.queuedLines = 0
    this.head = undefined
    this.buffered = 0
  }

  /** Lines dropped since start. */
  dropped (): number {
    return this.droppedTotal
  }

  setMaxBufferedBytes (bytes: number): void {
    this.maxBuffered = bytes
  }

  private enqueue (line: string): void {
    this.queued += line
    this.queuedLines++
    this.buffered += line.length
    if (this.queued.length >= this.batchBytes) {
      this.batches.push({ text: this.queued, lines: this.queuedLines })
      this.queued = ''
      this.queuedLines = 0
    }
  }

  private drop (lines: number): void {
    this.lost += lines
    this.droppedTotal += lines
  }

  private nextBatch (): string | undefined {
    const full = this.batches.shift()
    if (full !== undefined) return full.text
    if (this.queued === '') return undefined
    const batch = this.queued
    this.queued = ''
    this.queuedLines = 0
    return batch
  }
}
