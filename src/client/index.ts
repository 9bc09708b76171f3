/**
 * `auth-token-service/client`, kept for compatibility: the client is `@auth-token-service/guard/client`
 * now (packages/guard), installed without the token service's own dependencies.
 */
export * from '@auth-token-service/guard/client'
