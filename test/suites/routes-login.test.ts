// The fast suite's part: the routes, Authenticate to Logout, in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../routes/authenticate.test.js'
import '../routes/backends.test.js'
import '../routes/bad-request.test.js'
import '../routes/errors.test.js'
import '../routes/idle-timeout.test.js'
import '../routes/introspect.test.js'
import '../routes/lockout.test.js'
import '../routes/login.test.js'
import '../routes/logout.test.js'
import '../routes/overtaken-login.test.js'

release()
