/**
 * Names a padding function (JSONP callback) may not have. The answer is a script that defines a
 * function of the name asked for, on the page that loads it: a reserved word breaks the script,
 * and a global the page relies on would be replaced by the answer (`alert`, `setTimeout`,
 * `Object`…; or, through `constructor` and `__proto__`, what every object inherits). So every
 * global a page may rely on is refused below, not a handful of them.
 */

/** JavaScript's reserved words, strict-mode ones included, and the literals that are not names. */
const RESERVED_WORDS = [
  'break', 'case', 'catch', 'class', 'const', 'continue', 'debugger', 'default', 'delete', 'do', 'else', 'enum',
  'export', 'extends', 'false', 'finally', 'for', 'function', 'if', 'import', 'in', 'instanceof', 'new', 'null',
  'return', 'super', 'switch', 'this', 'throw', 'true', 'try', 'typeof', 'var', 'void', 'while', 'with', 'yield',
  'let', 'static', 'implements', 'interface', 'package', 'private', 'protected', 'public', 'await', 'async',
  'arguments', 'eval', 'undefined', 'NaN', 'Infinity'
]

/** The globals a page relies on: the language's, the browser's window, and the module loaders'. */
const PAGE_GLOBALS = [
  // The language
  'globalThis', 'Object', 'Function', 'Array', 'String', 'Number', 'Boolean', 'Symbol', 'BigInt', 'Math', 'JSON',
  'Date', 'RegExp', 'Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'EvalError', 'URIError',
  'AggregateError', 'Promise', 'Proxy', 'Reflect', 'Map', 'Set', 'WeakMap', 'WeakSet', 'WeakRef', 'Intl',
  'ArrayBuffer', 'SharedArrayBuffer', 'DataView', 'Atomics', 'Uint8Array', 'Int8Array', 'Uint16Array', 'Int16Array',
  'Uint32Array', 'Int32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array', 'Uint8ClampedArray',
  'isNaN', 'isFinite', 'parseInt', 'parseFloat', 'encodeURI', 'encodeURIComponent', 'decodeURI', 'decodeURIComponent',
  'escape', 'unescape',
  // What every object inherits
  'constructor', '__proto__', 'prototype', 'toString', 'toLocaleString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf',
  'propertyIsEnumerable', '__defineGetter__', '__defineSetter__', '__lookupGetter__', '__lookupSetter__',
  // The window
  'window', 'self', 'document', 'location', 'navigator', 'history', 'screen', 'top', 'parent', 'frames', 'opener',
  'frameElement', 'name', 'origin', 'status', 'closed', 'length', 'alert', 'confirm', 'prompt', 'print', 'open', 'close',
  'stop', 'focus', 'blur', 'postMessage', 'fetch', 'XMLHttpRequest', 'WebSocket', 'EventSource', 'Worker',
  'SharedWorker', 'setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'requestAnimationFrame',
  'cancelAnimationFrame', 'requestIdleCallback', 'queueMicrotask', 'structuredClone', 'atob', 'btoa', 'console',
  'localStorage', 'sessionStorage', 'indexedDB', 'caches', 'crypto', 'performance', 'customElements', 'Image', 'Audio',
  'Option', 'URL', 'URLSearchParams', 'Blob', 'File', 'FileReader', 'FormData', 'Headers', 'Request', 'Response',
  'Event', 'CustomEvent', 'EventTarget', 'MutationObserver', 'addEventListener', 'removeEventListener',
  'dispatchEvent', 'getComputedStyle', 'getSelection', 'matchMedia', 'scroll', 'scrollTo', 'scrollBy', 'trustedTypes',
  'Element', 'HTMLElement', 'Node', 'Document', 'Window',
  // The window's event handlers: defining one changes what the page does
  'onload', 'onunload', 'onbeforeunload', 'onerror', 'onmessage', 'onhashchange', 'onpopstate', 'onstorage', 'onfocus',
  'onblur', 'onresize', 'onscroll', 'onclick', 'onkeydown', 'onkeyup', 'onsubmit', 'onpageshow', 'onpagehide',
  // Module loaders and Node
  'require', 'module', 'exports', 'define', 'process', 'global', 'Buffer'
]

const REFUSED_WORDS: ReadonlySet<string> = new Set(RESERVED_WORDS)
const REFUSED_GLOBALS: ReadonlySet<string> = new Set(PAGE_GLOBALS)

/** Why a padding-function name is refused, or undefined when it may be used. */
export function paddingNameRefusal (name: string): 'reserved-word' | 'page-global' | undefined {
  if (REFUSED_WORDS.has(name)) return 'reserved-word'
  if (REFUSED_GLOBALS.has(name)) return 'page-global'
  return undefined
}
