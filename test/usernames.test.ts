import t from 'tap'
import { canonicalUsername } from '../src/core/usernames.js'

t.test('every width and case of a name is one canonical name', async (t) => {
  for (const variant of ['alice', 'Alice', 'ALICE', 'ａｌｉｃｅ', 'ＡＬＩＣＥ', 'aLiCe']) {
    t.same(canonicalUsername(variant), { ok: true, username: 'alice' }, JSON.stringify(variant))
  }
  // NFD and NFC spellings of one name are one name.
  t.same(canonicalUsername('Jose\u0301'), { ok: true, username: 'jos\u00e9' })
  t.same(canonicalUsername('Ｊｏｓé'), { ok: true, username: 'jos\u00e9' })
  // Halfwidth katakana is width-mapped too.
  t.same(canonicalUsername('\uff76\uff9e'), { ok: true, username: '\u30ac' })
  // What is not a look-alike stays: digits, punctuation, other scripts.
  t.same(canonicalUsername('o,brien.2'), { ok: true, username: 'o,brien.2' })
  t.same(canonicalUsername('Ωμέγα'), { ok: true, username: 'ωμέγα' })
})

t.test('spaces, controls, invisible and direction characters are refused, never stripped', async (t) => {
  const refused = ['alice ', ' alice', 'al ice', 'alice\t', 'alice\n', 'alice\u0000', 'alice\u200b', 'al\u00adice', 'alice\u202e',
    'alice\u2066', 'alice\ufeff', 'alice\u00a0', 'alice\u3000', 'alice\ufe0f', 'alice\u115f', 'alice\ue000', 'alice\u0085', 'alice\ud800']
  for (const name of refused) t.same(canonicalUsername(name), { ok: false, refusal: 'refused-character' }, JSON.stringify(name))
})

t.test('compatibility characters that only look like letters are refused', async (t) => {
  for (const name of ['\ufb01le', 'ⓐlice', 'alice²', '\u00b5ser', '\u210cello']) {
    t.same(canonicalUsername(name), { ok: false, refusal: 'compatibility-character' }, JSON.stringify(name))
  }
  t.same(canonicalUsername(''), { ok: false, refusal: 'empty' })
})
