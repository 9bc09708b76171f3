-- Machine credentials (issue 33). An account is a person's or a service's: a service account
-- has no password and can never Login; it authenticates with API keys only.
ALTER TABLE users ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'person' CHECK (kind IN ('person', 'service'));

-- API keys. The secret is never stored: only the digest the token store keys its record by
-- (the same hash as a token's), so a dump hands out no live key. Every key expires; `ended_at`
-- is set (before Redis is told) when it is revoked or its account is disabled or revoked-all,
-- so a record Redis lost is re-seeded from here only while the key is live.
CREATE TABLE IF NOT EXISTS api_keys (
  -- Public and random (12 bytes, base64url): names the key in lists and revocations, never the secret.
  id           text PRIMARY KEY,
  account_id   bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name         text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
  key_hash     text NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  last_used_at timestamptz,
  ended_at     timestamptz
);
CREATE INDEX IF NOT EXISTS api_keys_by_account ON api_keys (account_id, created_at);
