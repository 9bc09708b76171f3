-- Account recovery by email (api-contract, "Account recovery by email").

-- An account's address for recovery and invitation mail; NULL: no mail ever goes to it.
ALTER TABLE users ADD COLUMN IF NOT EXISTS email text CHECK (email IS NULL OR char_length(email) BETWEEN 3 AND 254);
CREATE INDEX IF NOT EXISTS users_by_email ON users (lower(email)) WHERE email IS NOT NULL;

-- Single-use links that set a password: `reset` (a forgotten one) or `invite` (the first one).
-- Only the SHA-256 (hex) of the link's 256-bit secret is kept: a dump of this table opens nothing.
-- A newer link of the account voids the older ones (voided_at); a used, voided or expired link
-- changes nothing. `token_epoch` is the account's when the link was made: anything that ends
-- the account's tokens (a new password however set, sign-out everywhere, disabling) raises the
-- account's, and a link made before it opens nothing, as a sign-in waiting for its code step.
CREATE TABLE IF NOT EXISTS reset_links (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id  bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  kind        text NOT NULL CHECK (kind IN ('reset', 'invite')),
  secret_hash text NOT NULL UNIQUE CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  token_epoch bigint NOT NULL,
  used_at     timestamptz,
  voided_at   timestamptz
);
CREATE INDEX IF NOT EXISTS reset_links_by_account ON reset_links (account_id) WHERE used_at IS NULL AND voided_at IS NULL;

-- The mail outbox, beside the webhook outbox and worked the same way (leased claims, retries with
-- backoff, visible to operators). The message is rendered when it is sent, from its link; the
-- link's secret waits here sealed (AES-256-GCM under the service's sealing key, AUTH_TOTP_KEY,
-- which the database does not hold) and is wiped once the mail is delivered, failed or superseded.
-- A row is retried until its link expires, then marked failed.
CREATE TABLE IF NOT EXISTS mail_deliveries (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  link_id         bigint NOT NULL REFERENCES reset_links (id) ON DELETE CASCADE,
  kind            text NOT NULL CHECK (kind IN ('reset', 'invite')),
  recipient       text NOT NULL,
  username        text NOT NULL,
  sealed_secret   text,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now(),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  leased_until    timestamptz,
  last_error      text,
  delivered_at    timestamptz
);
CREATE INDEX IF NOT EXISTS mail_deliveries_due ON mail_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS mail_deliveries_by_status ON mail_deliveries (status, id);
