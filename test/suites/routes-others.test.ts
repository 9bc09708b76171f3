// The fast suite's part: the routes, password to verify (sign-in pages, second factor, sessions), in one process (test/suites/README.md says why).
import { release } from './hold.js'
import '../routes/account-page.test.js'
import '../routes/password.test.js'
import '../routes/pointer.test.js'
import '../routes/refresh.test.js'
import '../routes/sessions.test.js'
import '../routes/signin-code-step.test.js'
import '../routes/signin-limits.test.js'
import '../routes/signin-passkeys.test.js'
import '../routes/signin.test.js'
import '../routes/token-cap.test.js'
import '../routes/token-sources.test.js'
import '../routes/totp-federated.test.js'
import '../routes/totp-instances.test.js'
import '../routes/totp.test.js'
import '../routes/verify.test.js'

release()
