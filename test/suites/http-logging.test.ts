// The fast suite's part: HTTP edge cases, logging, tracing, error reasons, in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../errors/reasons.test.js'
import '../http/client-limit.test.js'
import '../http/form-encoding.test.js'
import '../http/form-fields.test.js'
import '../http/invalid-utf8.test.js'
import '../http/slow-headers.test.js'
import '../http/token-source.test.js'
import '../logging/access-log.test.js'
import '../logging/redact.test.js'
import '../logging/throttled-log.test.js'
import '../tracing/scrub.test.js'
import '../tracing/tracing.test.js'

release()
