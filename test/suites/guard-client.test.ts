// The fast suite's part: the guard's lifecycle and failures, the client, the example service, in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../client/client.test.js'
import '../client/response-bound.test.js'
import '../examples/orders-service.test.js'
import '../examples/package-exports.test.js'
import '../guard/lifecycle.test.js'
import '../guard/token-sources.test.js'
import '../guard/unavailable.test.js'

release()
