// The fast suite's part: the admin API, the CLI's commands, the request metrics, in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../admin/admin-api.test.js'
import '../admin/admin-config.test.js'
import '../cli/commands.test.js'
import '../cli/runtime.test.js'
import '../cli/usage.test.js'
import '../metrics/request-metrics.test.js'

release()
