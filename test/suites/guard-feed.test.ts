// The fast suite's part: the guard's revocation feed: catching up, frozen, SSE, sessions ending, a skewed clock, in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../guard/catch-up.test.js'
import '../guard/frozen-feed.test.js'
import '../guard/sse-feed.test.js'
import '../guard/session-end.test.js'
import '../guard/skewed-clock.test.js'

release()
