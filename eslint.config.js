import neostandard from 'neostandard'

// neostandard: the standard style, for TypeScript (the style the code was written in).
export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'coverage/**', 'node_modules/**', '.tap/**', 'packages/*/dist/**'] }),
  {
    rules: {
      // Loops here wait on flags that callbacks set between awaits (a stop, an exit): the rule
      // cannot see those writes and flags every one.
      'no-unmodified-loop-condition': 'off',
      // A variable that a closure reads before its one assignment cannot be a const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }]
    }
  },
  {
    files: ['**/*.ts'],
    rules: {
      // `_` names a binding that is there only to be counted or skipped.
      '@typescript-eslint/no-unused-vars': ['error', { varsIgnorePattern: '^_', argsIgnorePattern: '^_' }]
    }
  },
  {
    files: ['src/**/*.ts', 'packages/*/src/**/*.ts'],
    rules: {
      // A function longer than a screenful or three stops being something a reader can hold in
      // mind: split it by what it does (a page, a step, a concern), not by line count.
      'max-lines-per-function': ['error', { max: 150, skipBlankLines: false, skipComments: false }]
    }
  }
]
