/**
 * Realistic account names for the fixture and the memory figure: `first.last` plus a
 * number where a name repeats, 8 to 20 characters like the directory exports they
 * imitate. Deterministic, so every run stores the same bytes.
 */
const FIRST = ['anna', 'ben', 'carla', 'david', 'elena', 'felix', 'greta', 'hugo', 'irene', 'jonas', 'katrin', 'lukas',
  'maria', 'niklas', 'olga', 'paul', 'quentin', 'rosa', 'stefan', 'tanja', 'ulrich', 'vera', 'walter', 'xenia',
  'yusuf', 'zoe', 'alexander', 'charlotte', 'maximilian', 'sophie']
const LAST = ['meier', 'schmidt', 'novak', 'rossi', 'garcia', 'kowalski', 'jensen', 'dubois', 'silva', 'nagy',
  'horvat', 'virtanen', 'andersson', 'papadopoulos', 'oconnor', 'fischer', 'weber', 'wagner', 'becker', 'hoffmann',
  'yilmaz', 'kaya', 'popescu', 'ivanova', 'smith', 'brown', 'martin', 'bernard', 'moreau', 'lefebvre']

export function accountName (index: number): string {
  const first = FIRST[index % FIRST.length] ?? 'anna'
  const last = LAST[Math.floor(index / FIRST.length) % LAST.length] ?? 'meier'
  const round = Math.floor(index / (FIRST.length * LAST.length))
  return round === 0 ? `${first}.${last}` : `${first}.${last}${round}`
}

/** A small seeded PRNG (mulberry32): the same figures every run. */
export function seededRandom (seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
