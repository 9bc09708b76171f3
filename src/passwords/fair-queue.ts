import { queueFull } from './bounded-queue.js'
import { tooManyRequests, type StatusError } from '../errors/status.js'

/**
 * The password-hash queue, shared fairly. The bounded queue alone served
 * first come, first served: 80 correct Logins of one account filled it, and every other
 * user's Login answered 503 for as long as the flood lasted. Here each caller (the account
 * and the client IP a Login names) may hold only a bounded share of it, and a free
 * hashing slot goes to the caller served least recently:
 *
 * - a caller holding its share (`running` hashing plus `queued` waiting) is refused at once
 *   with 429 and Retry-After: that caller alone, however long the queue is;
 * - a caller already hashing `running` times waits even when a slot is free;
 * - among the eligible waiting tasks, the one whose callers were served longest ago runs
 *   first, so a flood of one account costs another user's Login at most the hashes already
 *   running, not the flood's whole backlog. A task is as recent as its most recently served
 *   caller; when two tasks tie on that, it is a caller they share (two accounts behind one
 *   address), and their other callers decide; ties beyond that: first come. Judged on the
 *   most recent caller alone, every task of an address was as recent as the address's last
 *   hash: another account's Login behind the same address as a flooding one waited for the
 *   flood's whole backlog, 8-9 hashes (one thread, load 10-13 on 2 cores: median 533-987 ms,
 *   4-6 Logins in 5 s; after: none, 82-102 ms, 13-15).
 *
 * Beyond all that, the queue as a whole is still bounded (`maxQueued`: 503, Retry-After),
 * for a flood spread over many accounts and addresses.
 */

export interface HashShare {
  /** Hashes of one caller running at once. */
  running: number
  /** Hashes of one caller waiting beyond those. */
  queued: number
}

export interface FairQueueLimits {
  /** Hashes at once (the hashing threads). */
  concurrency: number
  /** Hashes allowed to wait, all callers together. */
  maxQueued: number
  perAccount: HashShare
  perIp: HashShare
}

/** Who a hash is for: the (normalized) username a Login names and its client IP. */
export interface HashCaller {
  account: string
  ip: string
}

export interface FairQueue {
  /** Runs `work` when a slot is free and its turn comes; refuses at once with 429 (share) or 503 (queue full). */
  run<T> (work: () => Promise<T>, caller?: HashCaller): Promise<T>
  /** Running plus waiting tasks. */
  depth (): number
}

export const shareExceeded = (): StatusError => tooManyRequests(1)

interface Holder {
  running: number
  waiting: number
  share: HashShare
  /** The dispatch number of its last task to start (0: never). */
  served: number
}

interface Waiting {
  holders: Holder[]
  start: () => void
}

export function createFairQueue (limits: FairQueueLimits): FairQueue {
  const holders = new Map<string, Holder>()
  const waiting: Waiting[] = []
  let running = 0
  let dispatches = 0

  const holdersOf = (caller: HashCaller | undefined): Holder[] => {
    if (caller === undefined) return []
    const keyed: Array<[string, HashShare]> = [[`account:${caller.account}`, limits.perAccount], [`ip:${caller.ip}`, limits.perIp]]
    return keyed.map(([key, share]) => {
      let holder = holders.get(key)
      if (holder === undefined) holders.set(key, holder = { running: 0, waiting: 0, share, served: 0 })
      return holder
    })
  }
  // A caller with nothing running or waiting is forgotten: the map stays as small as the queue.
  const forget = (): void => {
    for (const [key, holder] of holders) {
      if (holder.running === 0 && holder.waiting === 0) holders.delete(key)
    }
  }
  const eligible = (task: Waiting): boolean => task.holders.every((holder) => holder.running < holder.share.running)
  /** When its callers were last served, the most recent first. */
  const servedTimes = (task: Waiting): number[] => task.holders.map((holder) => holder.served).sort((a, b) => b - a)
  /** `task` goes before `other`: served longer ago by the most recent caller, then by the next. */
  const servedEarlier = (task: number[], other: number[]): boolean => {
    for (let index = 0; index < Math.max(task.length, other.length); index++) {
      const mine = task[index] ?? 0
      const theirs = other[index] ?? 0
      if (mine !== theirs) return mine < theirs
    }
    return false
  }

  const begin = (taskHolders: Holder[]): void => {
    running++
    dispatches++
    for (const holder of taskHolders) {
      holder.running++
      holder.served = dispatches
    }
  }

  /** Starts waiting tasks while slots are free: each time the eligible one served longest ago. */
  const dispatch = (): void => {
    while (running < limits.concurrency) {
      let best = -1
      let bestServed: number[] = []
      for (let index = 0; index < waiting.length; index++) {
        const task = waiting[index] as Waiting
        if (!eligible(task)) continue
        const served = servedTimes(task)
        if (best < 0 || servedEarlier(served, bestServed)) {
          best = index
          bestServed = served
        }
      }
      if (best < 0) return
      const [task] = waiting.splice(best, 1) as [Waiting]
      for (const holder of task.holders) holder.waiting--
      begin(task.holders)
      task.start()
    }
  }

  return {
    async run (work, caller) {
      const taskHolders = holdersOf(caller)
      if (taskHolders.some((holder) => holder.running + holder.waiting >= holder.share.running + holder.share.queued)) {
        forget()
        throw shareExceeded()
      }
      if (running < limits.concurrency && taskHolders.every((holder) => holder.running < holder.share.running)) {
        begin(taskHolders)
      } else {
        if (waiting.length >= limits.maxQueued) {
          forget()
          throw queueFull()
        }
        for (const holder of taskHolders) holder.waiting++
        await new Promise<void>((resolve) => { waiting.push({ holders: taskHolders, start: resolve }) })
      }
      try {
        return await work()
      } finally {
        running--
        for (const holder of taskHolders) holder.running--
        dispatch()
        forget()
      }
    },
    depth: () => running + waiting.length
  }
}
