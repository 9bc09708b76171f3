-- The OpenID Connect provider's clients (api-contract, Single sign-on), registered by operators
-- through the admin API or the command line. A confidential client's secret is never stored: only
-- its SHA-256 (hex), which the provider compares a presented secret's hash with. A public client
-- has none. The redirect URIs are kept exactly as registered: the provider compares a request's
-- redirect_uri with them as strings. `removed_at`: a removal under way (its tokens being ended):
-- the provider no longer finds the client, and the next removal finishes the job and deletes the row.
CREATE TABLE IF NOT EXISTS oidc_clients (
  -- Public and random (16 bytes, base64url).
  client_id                 text PRIMARY KEY,
  name                      text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
  redirect_uris             text[] NOT NULL CHECK (cardinality(redirect_uris) >= 1),
  post_logout_redirect_uris text[] NOT NULL DEFAULT '{}',
  public                    boolean NOT NULL,
  backchannel_logout_uri    text,
  secret_hash               text CHECK ((public AND secret_hash IS NULL) OR (NOT public AND secret_hash IS NOT NULL AND secret_hash ~ '^[0-9a-f]{64}$')),
  created_at                timestamptz NOT NULL DEFAULT now(),
  removed_at                timestamptz
);
