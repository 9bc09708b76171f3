import t from 'tap'
import { clientNetwork } from '../../src/core/routes/client-limit.js'

/*
 * Who a per-client limit counts: an IPv4 address as it is, an IPv4-mapped IPv6 address as its
 * IPv4 address, any other IPv6 address as its /64, however it is written.
 */

t.test('IPv4 and IPv4-mapped addresses: the address', async (t) => {
  t.equal(clientNetwork('198.51.100.7'), '198.51.100.7')
  t.equal(clientNetwork('::ffff:198.51.100.7'), '198.51.100.7', 'a dual-stack listener\'s IPv4 client')
  t.equal(clientNetwork('::FFFF:198.51.100.7'), '198.51.100.7')
})

t.test('IPv6: the /64, whatever the interface part and however it is written', async (t) => {
  const network = '2001:db8:1:2::/64'
  for (const address of [
    '2001:db8:1:2::1',
    '2001:db8:1:2::ffff',
    '2001:0db8:0001:0002:0000:0000:0000:0001',
    '2001:DB8:1:2:aaaa:bbbb:cccc:dddd',
    '2001:db8:1:2:0:0:1.2.3.4',
    '2001:db8:1:2::1.2.3.4',
    '2001:db8:1:2::9%eth0'
  ]) t.equal(clientNetwork(address), network, address)
  t.equal(clientNetwork('2001:db8::1'), '2001:db8:0:0::/64', 'zeros of the prefix written out')
  t.equal(clientNetwork('2001:db8:1::'), '2001:db8:1:0::/64')
  t.equal(clientNetwork('::1'), '0:0:0:0::/64', 'the loopback')
  t.equal(clientNetwork('fe80::1%eth0'), 'fe80:0:0:0::/64', 'a zone is no part of it')
  t.not(clientNetwork('2001:db8:1:3::1'), network, 'the next /64 is another client')
})
