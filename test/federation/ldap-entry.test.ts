import t from 'tap'
import { attributeValues, firstRdnValue } from '../../src/federation/ldap-entry.js'

t.test('a group named by its DN\'s first RDN (RFC 4514)', async (t) => {
  t.equal(firstRdnValue('cn=ops,ou=groups,dc=example,dc=org', 'cn'), 'ops')
  t.equal(firstRdnValue('CN=Domain Admins,CN=Users,DC=corp,DC=example', 'cn'), 'Domain Admins', 'the type in any case')
  t.equal(firstRdnValue('cn=a\\2Cb,ou=groups', 'cn'), 'a,b', 'a hex escape')
  t.equal(firstRdnValue('cn=a\\,b\\+c\\\\d,ou=groups', 'cn'), 'a,b+c\\d', 'escaped specials')
  t.equal(firstRdnValue('cn=D\\C3\\A9veloppeurs,ou=groups', 'cn'), 'Développeurs', 'escaped UTF-8 bytes')
  t.equal(firstRdnValue('cn=Développeurs,ou=groups', 'cn'), 'Développeurs', 'UTF-8 as it is')
  t.equal(firstRdnValue('cn=trail\\ ,ou=groups', 'cn'), 'trail ', 'an escaped trailing space stays')
  t.equal(firstRdnValue('cn = spaced , ou=groups', 'cn'), 'spaced', 'unescaped spaces around it go')
  t.equal(firstRdnValue('ou=ops+cn=Ops Team,ou=groups', 'cn'), 'Ops Team', 'from a multi-valued RDN')
  t.equal(firstRdnValue('cn=ops', 'cn'), 'ops', 'a DN of one RDN')
})

t.test('no name from the DN: the entry is read instead', async (t) => {
  t.equal(firstRdnValue('ou=ops,cn=named,dc=example', 'cn'), undefined, 'the first RDN has no cn, a later one does not count')
  t.equal(firstRdnValue('2.5.4.3=ops,dc=example', 'cn'), undefined, 'an OID is not guessed')
  t.equal(firstRdnValue('cn=#04036f7073,dc=example', 'cn'), undefined, 'BER bytes')
  t.equal(firstRdnValue('cn=,dc=example', 'cn'), undefined, 'empty')
  t.equal(firstRdnValue('not a dn', 'cn'), undefined)
  t.equal(firstRdnValue('cn=ops\\', 'cn'), undefined, 'a dangling escape')
})

t.test('attribute values: the name in any case, bytes as UTF-8', async (t) => {
  const entry = { dn: 'uid=alice', memberOf: ['cn=a', 'cn=b'], uid: 'alice', photo: Buffer.from('Zoë') }
  t.same(attributeValues(entry, 'memberof'), ['cn=a', 'cn=b'])
  t.same(attributeValues(entry, 'UID'), ['alice'])
  t.same(attributeValues(entry, 'photo'), ['Zoë'])
  t.same(attributeValues(entry, 'cn'), [])
  t.same(attributeValues(entry, 'dn'), [], 'the DN is no attribute')
})
