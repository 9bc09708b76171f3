// The fast suite's part: the user store on both databases, the Redis topologies, in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../stores/topologies.test.js'
import '../stores/user-store.test.js'

release()
