/** Text made safe for HTML content and double-quoted attribute values alike. */
export function escapeHtml (text: string): string {
  return text.replace(/[&<>"'`]/g, (char) => `&#${char.charCodeAt(0)};`)
}

/** A template tag whose interpolations are escaped unless they are already-built markup (`Markup`). */
export class Markup {
  readonly html: string
  constructor (html: string) { this.html = html }
  toString (): string { return this.html }
}

export function html (strings: TemplateStringsArray, ...values: Array<string | number | Markup | Markup[] | undefined>): Markup {
  let out = strings[0] ?? ''
  values.forEach((value, index) => {
    if (value instanceof Markup) out += value.html
    else if (Array.isArray(value)) out += value.map((part) => part.html).join('')
    else if (value !== undefined) out += escapeHtml(String(value))
    out += strings[index + 1] ?? ''
  })
  return new Markup(out)
}
