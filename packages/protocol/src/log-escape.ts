// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
const CONTROL_CHARACTERS = new RegExp(CONTROL_CHARACTER.source, 'g')

/** Escape CR, LF and other control characters before user text reaches a log line. */
export function escapeControlCharacters (text: string): string {
  // Usually there is none: a test finds that without the replace's callback machinery.
  if (!CONTROL_CHARACTER.test(text)) return text
  return text.replace(CONTROL_CHARACTERS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
