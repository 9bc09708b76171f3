/** What a promise rejected with (undefined when it resolved), for `t.match` on error values. */
export async function rejection (promise: Promise<unknown>): Promise<unknown> {
  return await promise.then(() => undefined, (error: unknown) => error)
}
