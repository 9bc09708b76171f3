import { createInterface } from 'node:readline'

/**
 * The password for `user add` / `user passwd`: the first line of standard input.
 * At a terminal it is typed without echo; nothing ever prints it back.
 */
export async function readPassword (input: NodeJS.ReadStream = process.stdin, prompt: NodeJS.WriteStream = process.stderr): Promise<string | undefined> {
  if (input.isTTY === true) return await readHidden(input, prompt)
  const lines = createInterface({ input, crlfDelay: Infinity, terminal: false })
  try {
    // eslint-disable-next-line no-unreachable-loop -- the first line is the password
    for await (const line of lines) return line
    return undefined
  } finally {
    lines.close()
  }
}

async function readHidden (input: NodeJS.ReadStream, prompt: NodeJS.WriteStream): Promise<string | undefined> {
  prompt.write('Password: ')
  input.setRawMode(true)
  input.resume()
  input.setEncoding('utf8')
  return await new Promise((resolve) => {
    let typed = ''
    const finish = (value: string | undefined): void => {
      input.setRawMode(false)
      input.pause()
      input.off('data', onData)
      prompt.write('\n')
      resolve(value)
    }
    const onData = (chunk: string): void => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n') return finish(typed)
        if (char === '\u0003' || char === '\u0004') return finish(undefined)
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1)
        else typed += char
      }
    }
    input.on('data', onData)
  })
}
