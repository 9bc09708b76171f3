import t from 'tap'
import { isGroupName, mappedGroupName, sortedGroups } from '../../src/core/group-names.js'

/*
 * The group-name rule and a directory's names mapped to it (api-contract, Groups and access
 * rules): lower-cased, other characters one `-`, never dropped silently — undefined only when
 * nothing of the name is left, which the directory's reader logs (test/federation/ldap-groups.test.ts).
 */

t.test('the rule: 1 to 64 of a-z 0-9 . _ -, a letter or digit first', async (t) => {
  for (const name of ['ops', '0ps', 'a', 'ops.eu_1-x', 'a'.repeat(64)]) t.ok(isGroupName(name), name)
  for (const name of ['', 'Ops', '-ops', '.ops', '_ops', 'a b', 'ops,dev', 'ops|x', 'ops;x', 'a'.repeat(65), 'é']) t.notOk(isGroupName(name), JSON.stringify(name))
})

t.test('a directory\'s names mapped to the rule', async (t) => {
  const cases: Array<[string, string | undefined]> = [
    ['Domain Admins', 'domain-admins'],
    ['ops', 'ops'],
    ['Ops/EU', 'ops-eu'],
    ['  Ops  Team  ', 'ops-team'],
    ['.hidden', 'hidden'],
    ['Développeurs', 'developpeurs'],
    ['GRP_Build.2', 'grp_build.2'],
    [`${'x'.repeat(63)} tail`, 'x'.repeat(63)],
    ['B'.repeat(100), 'b'.repeat(64)],
    ['!!!', undefined],
    ['', undefined]
  ]
  for (const [directory, mapped] of cases) t.equal(mappedGroupName(directory), mapped, JSON.stringify(directory))
  for (const [directory] of cases) {
    const mapped = mappedGroupName(directory)
    if (mapped !== undefined) t.ok(isGroupName(mapped), `${JSON.stringify(directory)} maps to a valid name`)
  }
})

t.test('a set: each once, in code-unit order', async (t) => {
  t.same(sortedGroups(['ops', 'dev', 'ops', 'a.b', '0x']), ['0x', 'a.b', 'dev', 'ops'])
})
