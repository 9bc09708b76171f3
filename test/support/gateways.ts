import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, tempDir, waitFor, type Scope } from '../../support/processes.js'

/**
 * Real gateways from Debian's packages in front of an echo upstream, each on free ports with
 * its configuration, pid, logs and temp files in a throwaway directory (no root needed):
 * nginx with `auth_request`, Caddy with `forward_auth`, both asking the service's
 * /auth/verify; Apache with mod_auth_openidc, a relying party of the service's OpenID Connect
 * provider. A missing binary or module fails the test with how to get it.
 */

export interface Upstream {
  readonly origin: string
  /** The headers of every request that reached it, in order. */
  readonly seen: IncomingHttpHeaders[]
}

/** A small upstream that answers each request with the headers it received, as JSON. */
export async function startEchoUpstream (scope: Scope): Promise<Upstream> {
  const seen: IncomingHttpHeaders[] = []
  const server: Server = createServer((request, response) => {
    seen.push(request.headers)
    request.resume()
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: request.url, headers: request.headers }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  scope.teardown(async () => { await new Promise((resolve) => server.close(resolve)) })
  const address = server.address()
  return { origin: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`, seen }
}

export interface Gateway {
  readonly name: 'nginx' | 'caddy' | 'apache'
  readonly origin: string
  readonly dir: string
}

/** `what` is required at `path`; `pkg` is the Debian package that installs it. */
function requireBinary (path: string, what: string, pkg = what): void {
  if (!existsSync(path)) throw new Error(`${what} is required at ${path}: apt-get install ${pkg} (\`bash .ci/run\` does it)`)
}

async function run (scope: Scope, name: string, command: string, args: string[], env: NodeJS.ProcessEnv, dir: string, origin: string): Promise<void> {
  const child: ChildProcess = spawn(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve() }))
  scope.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => { child.kill('SIGKILL') }, 5000)
    await exited
    clearTimeout(timer)
  })
  // Up once it answers any HTTP at all; a process that exits first fails at once, with its log.
  let problem: string | undefined
  try {
    await waitFor(`${name} on ${origin}`, async () => {
      if (child.exitCode !== null) {
        problem = `exited with ${child.exitCode}`
        return true
      }
      // Not listening yet is "not yet" (waitFor fails at once on a throw).
      return await fetch(origin, { signal: AbortSignal.timeout(1000) }).then(() => true, () => false)
    }, { timeoutMs: 20_000 })
  } catch (error) {
    problem = String(error)
  }
  if (problem !== undefined) {
    const log = await readFile(join(dir, 'error.log'), 'utf8').catch(() => '')
    throw new Error(`${name} did not start (${problem}):\n${stderr}\n${log}`)
  }
}

/**
 * nginx with deploy/nginx-forward-auth.conf as shipped, its upstreams and port pointed at
 * this test's (`auth_request` to /auth/verify, `auth_request_set` + `proxy_set_header`).
 */
export async function startNginx (scope: Scope, serviceOrigin: string, upstream: Upstream): Promise<Gateway> {
  requireBinary('/usr/sbin/nginx', 'nginx')
  const dir = await tempDir(scope, 'ats-nginx-')
  const port = await freePort()
  const shipped = await readFile(new URL('../../deploy/nginx-forward-auth.conf', import.meta.url), 'utf8')
  const site = shipped
    .replace(/upstream auth_verify \{[^}]*\}/, `upstream auth_verify {\n    server ${serviceOrigin.replace(/^http:\/\//, '')};\n    keepalive 16;\n}`)
    .replace(/upstream protected_app \{[^}]*\}/, `upstream protected_app {\n    server ${upstream.origin.replace(/^http:\/\//, '')};\n}`)
    .replace('listen 8081;', `listen 127.0.0.1:${port};`)
  if (site === shipped || !site.includes(`127.0.0.1:${port}`)) throw new Error('deploy/nginx-forward-auth.conf: its upstreams or listen line changed; update this helper')
  // nginx.conf's own parts, every path in the temp dir, so that no root is needed.
  const conf = [
    'worker_processes 1;',
    `pid ${dir}/nginx.pid;`,
    `error_log ${dir}/error.log info;`,
    'events { worker_connections 128; }',
    'http {',
    `  access_log ${dir}/access.log;`,
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((kind) => `  ${kind}_temp_path ${dir}/${kind};`),
    site,
    '}'
  ].join('\n')
  await writeFile(join(dir, 'nginx.conf'), conf)
  const origin = `http://127.0.0.1:${port}`
  await run(scope, 'nginx', '/usr/sbin/nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', 'daemon off;'], process.env, dir, origin)
  return { name: 'nginx', origin, dir }
}

/**
 * Caddy with deploy/Caddyfile as shipped (`forward_auth` + `copy_headers`), its placeholders from the environment.
 * `siteHost`: the host name of its site address (a browser test's passkeys need `localhost`: WebAuthn takes no IP address).
 */
export async function startCaddy (scope: Scope, serviceOrigin: string, upstream: Upstream, options: { siteHost?: string } = {}): Promise<Gateway> {
  requireBinary('/usr/bin/caddy', 'caddy')
  const dir = await tempDir(scope, 'ats-caddy-')
  const port = await freePort()
  const shipped = await readFile(new URL('../../deploy/Caddyfile', import.meta.url), 'utf8')
  // The test's own global options: no admin endpoint (nothing saved either), no certificates.
  await writeFile(join(dir, 'Caddyfile'), `{\n\tadmin off\n\tauto_https off\n}\n\n${shipped}`)
  const origin = `http://${options.siteHost ?? '127.0.0.1'}:${port}`
  const env = {
    ...process.env,
    HOME: dir,
    XDG_DATA_HOME: join(dir, 'data'),
    XDG_CONFIG_HOME: join(dir, 'config'),
    SITE_ADDRESS: origin,
    AUTH_SERVICE: serviceOrigin.replace(/^http:\/\//, ''),
    UPSTREAM: upstream.origin.replace(/^http:\/\//, '')
  }
  await run(scope, 'caddy', '/usr/bin/caddy', ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], env, dir, origin)
  return { name: 'caddy', origin, dir }
}

const APACHE = '/usr/sbin/apache2'
const APACHE_MODULES = '/usr/lib/apache2/modules'

export interface OidcRelyingParty extends Gateway {
  /** Where the provider sends the browser back (mod_auth_openidc's OIDCRedirectURI). */
  readonly redirectUri: string
}

/** What the test registers at the provider for the relying party, given its redirect URI. */
export type RegisterClient = (redirectUri: string) => Promise<{ clientId: string, clientSecret: string }>

/**
 * Apache (Debian's) with mod_auth_openidc (libapache2-mod-auth-openidc) and deploy/apache-oidc.conf
 * as shipped, a relying party of the provider at `issuer`: its variables from the environment
 * (the client `register` makes for its redirect URI, a crypto passphrase of its own, `upstream`),
 * the server's own parts (modules, port, files) in a configuration that includes it. Reached as
 * `siteHost` (default `localhost`: another site than the service's 127.0.0.1, so the two share
 * no cookies). Its ServerRoot, pid, logs and runtime files in a temp dir; started as root, its
 * children run as nobody (Apache runs none as root).
 */
export async function startApacheOidc (scope: Scope, options: { issuer: string, upstream: Upstream, register: RegisterClient, siteHost?: string }): Promise<OidcRelyingParty> {
  requireBinary(APACHE, 'apache2', 'apache2-bin')
  requireBinary(`${APACHE_MODULES}/mod_auth_openidc.so`, 'mod_auth_openidc', 'libapache2-mod-auth-openidc')
  const dir = await tempDir(scope, 'ats-apache-')
  const port = await freePort()
  const origin = `http://${options.siteHost ?? 'localhost'}:${port}`
  const redirectUri = `${origin}/protected/redirect_uri`
  const { clientId, clientSecret } = await options.register(redirectUri)
  const shipped = fileURLToPath(new URL('../../deploy/apache-oidc.conf', import.meta.url))
  const modules = ['mpm_event', 'authn_core', 'authz_core', 'authz_user', 'proxy', 'proxy_http', 'auth_openidc']
  const quoted = (value: string): string => `"${value.replace(/["\\]/g, '\\$&')}"`
  const conf = [
    `ServerRoot ${quoted(dir)}`,
    `ServerName ${new URL(origin).host}`,
    `Listen 127.0.0.1:${port}`,
    `PidFile ${quoted(join(dir, 'apache2.pid'))}`,
    `DefaultRuntimeDir ${quoted(dir)}`,
    `ErrorLog ${quoted(join(dir, 'error.log'))}`,
    ...modules.map((name) => `LoadModule ${name}_module ${APACHE_MODULES}/mod_${name}.so`),
    'LogLevel warn auth_openidc:info',
    // One child process: enough here (mod_auth_openidc keeps its sessions in shared memory either way).
    'ServerLimit 1',
    'StartServers 1',
    'ThreadsPerChild 16',
    'MaxRequestWorkers 16',
    ...(process.getuid?.() === 0 ? ['User nobody', 'Group nogroup'] : []),
    `Include ${quoted(shipped)}`,
    ''
  ].join('\n')
  const file = join(dir, 'apache2.conf')
  await writeFile(file, conf)
  const env = {
    ...process.env,
    AUTH_OIDC_ISSUER: options.issuer,
    APP_ORIGIN: origin,
    OIDC_CLIENT_ID: clientId,
    OIDC_CLIENT_SECRET: clientSecret,
    OIDC_CRYPTO_PASSPHRASE: randomBytes(32).toString('base64url'),
    UPSTREAM: options.upstream.origin
  }
  await run(scope, 'apache2', APACHE, ['-d', dir, '-f', file, '-DFOREGROUND'], env, dir, origin)
  return { name: 'apache', origin, dir, redirectUri }
}
