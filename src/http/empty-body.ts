/** What a POST without a body carries, so body schemas can require an object and still allow none. */
export const EMPTY_BODY: Readonly<Record<string, never>> = Object.freeze({})
