import { loadConfig, type Config } from '../../src/config.js'

/** The service's defaults, as a clean environment gives them, with a test's changes. */
export function testConfig (overrides: Partial<Config> = {}): Config {
  return loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }, overrides)
}
