// The fast suite's part: the token store and the other Redis stores, in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../stores/token-store.test.js'
import '../tokens/tokens-time.test.js'
import '../stores/pending-store.test.js'
import '../stores/redis-eviction.test.js'
import '../stores/redis-persistence.test.js'

release()
