/**
 * The hashes of ended tokens and keys, each for a while (the deny list's time): what the
 * guard's revocation checks ask, and what keeps an ended API key from being re-seeded. A Map in
 * order of denial, so the expired ones are at its front and each denial drops them from there.
 */
export class DenySet {
  private readonly until = new Map<string, number>()

  private readonly now: () => number
  private readonly ttlMs: number

  constructor (now: () => number, ttlMs: number) {
    this.now = now
    this.ttlMs = ttlMs
  }

  add (hash: string): void {
    const t = this.now()
    for (const [denied, until] of this.until) {
      if (until > t) break
      this.until.delete(denied)
    }
    // Moved to the end: its new time is the latest.
    this.until.delete(hash)
    this.until.set(hash, t + this.ttlMs)
  }

  has (hash: string): boolean {
    const until = this.until.get(hash)
    return until !== undefined && until > this.now()
  }

  list (): string[] {
    const t = this.now()
    return [...this.until].filter(([, until]) => until > t).map(([hash]) => hash)
  }

  clear (): void {
    this.until.clear()
  }
}
