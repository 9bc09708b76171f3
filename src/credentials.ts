/** Usernames are stored and compared after NFC normalization, case kept. */
export function normalizeUsername (username: string): string {
  return username.normalize('NFC')
}

/** Passwords are NFC-normalized before hashing and checking, exact otherwise. */
export function normalizePassword (password: string): string {
  return password.normalize('NFC')
}

export const USERNAME_MAX_CHARS = 256
export const PASSWORD_MAX_BYTES = 1024

export function isAcceptableUsername (normalized: string): boolean {
  // Length in code points, so an emoji counts once.
  let count = 0
  for (const _ of normalized) {
    if (++count > USERNAME_MAX_CHARS) return false
  }
  return count >= 1
}

export function isAcceptablePassword (password: string): boolean {
  return password.length >= 1 && Buffer.byteLength(password, 'utf8') <= PASSWORD_MAX_BYTES
}

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
const CONTROL_CHARACTERS = new RegExp(CONTROL_CHARACTER.source, 'g')

/** Escape CR, LF and other control characters before user text reaches a log line. */
export function escapeControlCharacters (text: string): string {
  // Usually there is none: a test finds that without the replace's callback machinery.
  if (!CONTROL_CHARACTER.test(text)) return text
  return text.replace(CONTROL_CHARACTERS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
