import t from 'tap'
import { passwordProblem, usernameProblem } from '../src/core/credentials.js'

/* The credential rules (credentials.ts): the reasons a username or a password is refused. */

t.test('usernames and passwords after NFC', async (t) => {
  t.equal(usernameProblem('alice'), undefined)
  t.equal(usernameProblem(''), 'username is empty')
  t.equal(usernameProblem('😀'.repeat(256)), undefined, '256 characters, counted as code points')
  t.equal(usernameProblem('u'.repeat(257)), 'username is longer than 256 characters')
  t.equal(passwordProblem('é'.repeat(512)), undefined, '1024 bytes')
  t.equal(passwordProblem('é'.repeat(513)), 'password is longer than 1024 bytes')
  t.equal(passwordProblem(''), 'password is empty')
})
