// The fast suite's part: security (brute force, fuzzing, cross-site, hashing and its queue's order, logs), in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../passwords/fair-queue.test.js'
import '../security/brute-force.test.js'
import '../security/canonical-usernames.test.js'
import '../security/cross-site.test.js'
import '../security/fuzz.test.js'
import '../security/hashing.test.js'
import '../security/logs.test.js'
import '../security/step-up.test.js'

release()
