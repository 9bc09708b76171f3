// The fast suite's part: the login limiter, replica acknowledgements, sessions, the data directory, in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../stores/login-limiter.test.js'
import '../stores/request-limiter.test.js'
import '../stores/replica-acks.test.js'
import '../sessions/sessions.test.js'
import '../db/create-database.test.js'
import '../db/data-dir-lock.test.js'

release()
