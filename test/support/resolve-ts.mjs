// How a test process runs the TypeScript sources as they are (package.json, tap's `node-arg`):
// Node strips the types itself (tap's TypeScript plugin in its `type-strip-only` mode, which
// leaves ts-node out; tsconfig's `erasableSyntaxOnly` keeps the code strippable), and this hook
// maps what the sources import, `./x.js` (the name tsc gives the output under NodeNext), to
// `./x.ts` when no `./x.js` is there. One synchronous hook in the loading thread, where ts-node's
// ran in a thread of their own: a test process that imports the app reached its first test with
// 0.6 CPU-s instead of 1.5 (docs/development.md, "Running the tests").
import { enableCompileCache, registerHooks } from 'node:module'

// Node's compile cache keeps the stripped and compiled modules between processes (in the temp
// directory): 0.2 CPU-s less for each. Not under coverage: code from the cache reports coarser
// block counts to the coverage tap collects (the branches of one file came out 4-17 % apart).
if (process.env._TAPJS_PROCESSINFO_COVERAGE_ !== '1') enableCompileCache()

registerHooks({
  resolve (specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context)
    } catch (error) {
      if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !specifier.endsWith('.js') || !isRelative(specifier) ||
        !context.parentURL?.startsWith('file:') || context.parentURL.includes('/node_modules/')) throw error
      return nextResolve(`${specifier.slice(0, -3)}.ts`, context)
    }
  }
})

/** @param {string} specifier */
function isRelative (specifier) {
  return specifier.startsWith('./') || specifier.startsWith('../')
}
