// The fast suite's part: the guard's cache and API keys, on one Redis and a Cluster, in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../guard/cache.test.js'
import '../guard/positive-cache.test.js'
import '../guard/api-keys.test.js'
import '../guard/cluster.test.js'

release()
