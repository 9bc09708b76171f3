/**
 * `auth-token-service/guard`, kept for services that import the guard from the service's own
 * package: the guard is the package `@auth-token-service/guard` now (packages/guard), which a
 * service installs without the token service's storage, hashing, directory, docs or tracing.
 */
export * from '@auth-token-service/guard'
export { default } from '@auth-token-service/guard'
