// The fast suite's part: the hash workers, in a process of their own: they count this process's
// threads at the hashing priority, which every app another file builds here would add to.
import { release } from './hold.js'
import '../passwords/hash-workers.test.js'

release()
