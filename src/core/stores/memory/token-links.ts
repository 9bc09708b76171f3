/**
 * The in-process store's links from a token to the tokens given out under it (its OpenID Connect
 * access tokens: issueUnder), as the Redis store's `<b>L<digest>` sets: ending the token ends them.
 * Parents that expired, rather than ended, leave their sets behind: swept now and then, so the map
 * stays the size of the live tokens.
 */
export class TokenLinks {
  private readonly children = new Map<string, Set<string>>()
  private sweepAt = 1024
  private readonly alive: (hash: string) => boolean

  constructor (alive: (hash: string) => boolean) {
    this.alive = alive
  }

  link (parentHash: string, childHash: string): void {
    let under = this.children.get(parentHash)
    if (under === undefined) {
      if (this.children.size >= this.sweepAt) this.sweep()
      this.children.set(parentHash, under = new Set())
    }
    under.add(childHash)
  }

  /** The tokens under this one, forgotten here (the caller ends them). */
  take (parentHash: string): ReadonlySet<string> | undefined {
    const under = this.children.get(parentHash)
    this.children.delete(parentHash)
    return under
  }

  clear (): void {
    this.children.clear()
  }

  private sweep (): void {
    for (const hash of this.children.keys()) if (!this.alive(hash)) this.children.delete(hash)
    this.sweepAt = Math.max(1024, this.children.size * 2)
  }
}
