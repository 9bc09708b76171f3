/** How the pages show a client and an instant: for a person, not a log. */

const BROWSERS: Array<[RegExp, string]> = [
  [/Edg(?:e|A|iOS)?\/(\d+)/, 'Edge'],
  [/OPR\/(\d+)/, 'Opera'],
  [/Firefox\/(\d+)/, 'Firefox'],
  [/HeadlessChrome\/(\d+)/, 'Headless Chrome'],
  [/(?:Chrome|CriOS)\/(\d+)/, 'Chrome'],
  [/Version\/(\d+)[^ ]* (?:Mobile\/\S+ )?Safari\//, 'Safari'],
  [/curl\/(\d+)/, 'curl']
]

const SYSTEMS: Array<[RegExp, string]> = [
  [/Android/, 'Android'],
  [/iPhone|iPad|iPod/, 'iOS'],
  [/Windows/, 'Windows'],
  [/Mac OS X|Macintosh/, 'macOS'],
  [/CrOS/, 'ChromeOS'],
  [/Linux/, 'Linux']
]

/** "Chrome 142 on Linux" from a User-Agent; the text itself (cut) when nothing is recognized. */
export function clientName (userAgent: string): string {
  if (userAgent === '') return 'Unknown client'
  const browser = BROWSERS.map(([pattern, name]) => [pattern.exec(userAgent), name] as const).find(([match]) => match !== null)
  const system = SYSTEMS.find(([pattern]) => pattern.test(userAgent))?.[1]
  if (browser === undefined) return userAgent.length > 60 ? `${userAgent.slice(0, 57)}…` : userAgent
  const [match, name] = browser
  return `${name} ${match?.[1] ?? ''}${system === undefined ? '' : ` on ${system}`}`
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

/** "27 Nov 2026, 08:58 UTC". */
export function instant (epochMs: number): string {
  const date = new Date(epochMs)
  const pad = (value: number): string => String(value).padStart(2, '0')
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()] ?? ''} ${date.getUTCFullYear()}, ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())} UTC`
}

/** A limit's refusal as a person reads it: when to try again, from its Retry-After, in whole minutes. */
export function tooManyAttempts (retryAfter: string | undefined): string {
  const seconds = Number(retryAfter ?? '60')
  const minutes = Math.max(1, Math.ceil(seconds / 60))
  return `Too many attempts. Try again in ${minutes === 1 ? 'a minute' : `${minutes} minutes`}.`
}
