-- The OpenID Connect provider's signing keys (api-contract, Single sign-on). `kid` is the RFC 7638
-- thumbprint of `public_jwk`; `sealed_private` is the private JWK sealed like the TOTP secrets
-- (AES-256-GCM under AUTH_TOTP_KEY, the kid as associated data): never in the clear. A key is
-- current while `retired_at` is null; a retired one stays in the JWKS until the ID tokens it
-- signed have expired, then goes. One current key per algorithm, held by the index below, so
-- that services starting together on an empty table make one set between them, not one each.
CREATE TABLE IF NOT EXISTS oidc_signing_keys (
  kid            text PRIMARY KEY,
  alg            text NOT NULL CHECK (alg IN ('RS256', 'ES256')),
  public_jwk     jsonb NOT NULL,
  sealed_private text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  retired_at     timestamptz
);
CREATE UNIQUE INDEX IF NOT EXISTS oidc_signing_keys_one_current ON oidc_signing_keys (alg) WHERE retired_at IS NULL;
