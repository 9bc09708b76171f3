/** A setting that stops the start: one line, `VARIABLE: problem`, never the value of a secret. */
export class ConfigError extends Error {
  readonly variable: string
  constructor (variable: string, problem: string) {
    super(`${variable}: ${problem}`)
    this.name = 'ConfigError'
    this.variable = variable
  }
}
