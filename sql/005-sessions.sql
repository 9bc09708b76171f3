-- Sessions (issue 21): what a person sees of their tokens, kept here rather than in Redis so
-- that a token's Redis footprint stays what Authenticate needs (docs/revocation-and-sessions.md). Written by
-- the Login that already reads the account; a token is never stored, only the digest the token
-- store keys it by (hashToken), to find the row of the token that is presented or ended.
CREATE TABLE IF NOT EXISTS sessions (
  -- Public and random (16 bytes, base64url): not the token and not derivable to it.
  id           text PRIMARY KEY,
  account_id   bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_hash   text NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL,
  refreshed_at timestamptz,
  expires_at   timestamptz NOT NULL,
  client_ip    text NOT NULL,
  -- As sent at creation, cut to 256 characters, control characters escaped.
  user_agent   text NOT NULL,
  federated    boolean NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_account ON sessions (account_id, created_at);
