import t from 'tap'
import { escapeDnValue, escapeFilterValue, fillGroupFilter, fillTemplate } from '../../src/federation/ldap-escape.js'

t.test('filter values (RFC 4515): the five specials become hex escapes', async (t) => {
  t.equal(escapeFilterValue('alice'), 'alice')
  t.equal(escapeFilterValue('*'), '\\2a')
  t.equal(escapeFilterValue('a*)(uid=*'), 'a\\2a\\29\\28uid=\\2a')
  t.equal(escapeFilterValue('back\\slash'), 'back\\5cslash')
  t.equal(escapeFilterValue('nul\u0000'), 'nul\\00')
  t.equal(escapeFilterValue('o,brien'), 'o,brien', 'a comma is no filter special')
  t.equal(fillTemplate('(&(objectClass=person)(uid={username}))', escapeFilterValue('*')), '(&(objectClass=person)(uid=\\2a))')
})

t.test('DN values (RFC 4514): specials get a backslash, edges are protected', async (t) => {
  t.equal(escapeDnValue('alice'), 'alice')
  t.equal(escapeDnValue('o,brien'), 'o\\,brien')
  t.equal(escapeDnValue('alice,ou=admins'), 'alice\\,ou\\=admins')
  t.equal(escapeDnValue('a+b"c;d<e>f\\g'), 'a\\+b\\"c\\;d\\<e\\>f\\\\g')
  t.equal(escapeDnValue('#hash'), '\\#hash')
  t.equal(escapeDnValue(' lead'), '\\ lead')
  t.equal(escapeDnValue('trail '), 'trail\\ ')
  t.equal(escapeDnValue('nul\u0000'), 'nul\\00')
  t.equal(fillTemplate('uid={username},ou=people,dc=example,dc=org', escapeDnValue('x,ou=services')), 'uid=x\\,ou\\=services,ou=people,dc=example,dc=org')
})

t.test('the group filter: {dn} and {username} escaped, in one pass', async (t) => {
  const filter = '(|(member={dn})(uniqueMember={dn})(memberUid={username}))'
  t.equal(fillGroupFilter(filter, { dn: 'uid=o\\2Cbrien,ou=people,dc=example,dc=org', username: 'o,brien' }),
    '(|(member=uid=o\\5c2Cbrien,ou=people,dc=example,dc=org)(uniqueMember=uid=o\\5c2Cbrien,ou=people,dc=example,dc=org)(memberUid=o,brien))', 'the DN\'s own escapes escaped again for the filter')
  t.equal(fillGroupFilter('(memberUid={username})', { dn: 'x', username: '*)(cn=*' }), '(memberUid=\\2a\\29\\28cn=\\2a)', 'a name cannot widen the search')
  t.equal(fillGroupFilter('(&(member={dn})(memberUid={username}))', { dn: 'uid=a', username: '{dn}' }), '(&(member=uid=a)(memberUid={dn}))', 'a name holding {dn} stays text')
})
