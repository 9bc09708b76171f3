import { NodeFS } from '@electric-sql/pglite/nodefs'
import { SHARED_BITS } from './private-files.js'

// Apart from private-files.ts, which the command line loads to find a running service: that
// needs no PGlite, and importing its filesystem module cost every command 20-30 ms.

/** What PGlite's preRun hands over: its Emscripten module, of which only NODEFS is touched here. */
interface EmscriptenNodeFs {
  node_ops: { mknod: (parent: unknown, name: string, mode: number, dev: number) => unknown }
  doSetAttr: (arg: unknown, node: unknown, attr: { mode?: number }, ...rest: unknown[]) => unknown
}

/**
 * PGlite's Node filesystem with private modes. Emscripten creates each file with the mode Postgres
 * asked for and then chmods it to exactly that mode, so the process umask never applies: Postgres
 * in WebAssembly asks for 0666, and every file (the WAL, the catalogs, postgresql.conf) was
 * world-writable. Here every mode Emscripten gives a node (at creation, and by chmod) loses its
 * group and other bits before it reaches the disk.
 */
export class PrivateNodeFS extends NodeFS {
  override async init (...args: Parameters<NodeFS['init']>): ReturnType<NodeFS['init']> {
    const { emscriptenOpts } = await super.init(...args)
    const makePrivate = (mod: { NODEFS: unknown }): void => {
      const nodefs = mod.NODEFS as EmscriptenNodeFs
      const mknod = nodefs.node_ops.mknod
      nodefs.node_ops.mknod = (parent, name, mode, dev) => mknod(parent, name, mode & ~SHARED_BITS, dev)
      const doSetAttr = nodefs.doSetAttr
      nodefs.doSetAttr = (arg, node, attr, ...rest) =>
        doSetAttr(arg, node, attr.mode === undefined ? attr : { ...attr, mode: attr.mode & ~SHARED_BITS }, ...rest)
    }
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), makePrivate] } }
  }
}
