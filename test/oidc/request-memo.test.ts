import t from 'tap'
import { requestMemo } from '../../src/oidc/request-memo.js'

/*
 * A read made once per provider request (the account, the sign-in link of a session): never
 * shared between requests, never kept outside one, a failure not kept, a write seen.
 */

t.test('once per request, never across requests or outside one; a failed read is read again; a write is what the request then reads', async (t) => {
  let request: object | undefined
  const reads: string[] = []
  let fail = false
  const memo = requestMemo(() => request, async (id) => {
    reads.push(id)
    if (fail) throw new Error('down')
    return `${id}@${reads.length}`
  })

  request = {}
  const [a, b] = await Promise.all([memo.read('x'), memo.read('x')])
  t.equal(a, 'x@1')
  t.equal(b, 'x@1', 'two reads at once in one request: one read')
  t.equal(await memo.read('y'), 'y@2', 'another id: its own read')
  t.equal(await memo.read('x'), 'x@1')

  request = {}
  t.equal(await memo.read('x'), 'x@3', 'the next request reads afresh')

  request = undefined
  t.equal(await memo.read('x'), 'x@4', 'outside a request: every call reads')
  t.equal(await memo.read('x'), 'x@5')

  request = {}
  fail = true
  await t.rejects(memo.read('z'), { message: 'down' })
  fail = false
  t.equal(await memo.read('z'), 'z@7', 'a failed read is not kept')

  memo.set('x', 'written')
  t.equal(await memo.read('x'), 'written', 'a write made in the request is what it reads next')
  t.same(reads, ['x', 'y', 'x', 'x', 'x', 'z', 'z'])
})
