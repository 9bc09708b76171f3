import t from 'tap'

/*
 * Imported first by each group of test/suites/: no test of the group starts until the group has
 * imported all its files (`release()`, the group's last line). A file's top-level code (building
 * its app, its `t.before`) then runs before any test, as it does in a process of its own, and
 * not while another file's tests run: a file that awaits at its top level would otherwise let
 * the files before it start their tests meanwhile.
 */
let release = (): void => {}
const imported = new Promise<void>((resolve) => { release = resolve })
t.before(async () => { await imported })

export { release }
