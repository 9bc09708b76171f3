// The fast suite's part: health, the error log, OpenAPI, the internal listener, in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../operations/error-log.test.js'
import '../operations/health.test.js'
import '../operations/internal-access-log.test.js'
import '../operations/internal-listener.test.js'
import '../operations/openapi.test.js'

release()
