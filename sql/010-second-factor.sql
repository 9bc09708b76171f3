-- A second factor: TOTP (RFC 6238) with one-time recovery codes. The shared secret is stored
-- sealed (AES-256-GCM, src/totp/sealed-secret.ts) with a key the database does not hold
-- (AUTH_TOTP_KEY, AUTH_TOTP_KEY_FILE or a 0600 file in the data directory), so a dump of this
-- table alone reveals no secret. `active` is false between enrollment and its confirmation.
CREATE TABLE IF NOT EXISTS totp_factors (
  account_id   bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  secret_sealed text NOT NULL,
  active       boolean NOT NULL DEFAULT false,
  -- The last time step whose code was accepted: a code is taken only for a later step, so a
  -- code is accepted once (RFC 6238 §5.2), by every instance sharing this database, atomically.
  last_step    bigint,
  created_at   timestamptz NOT NULL DEFAULT now(),
  confirmed_at timestamptz
);

-- Recovery codes: only their SHA-256 (each code carries 80 random bits), each usable once.
CREATE TABLE IF NOT EXISTS totp_recovery_codes (
  account_id bigint NOT NULL REFERENCES totp_factors (account_id) ON DELETE CASCADE,
  code_hash  text NOT NULL,
  used_at    timestamptz,
  PRIMARY KEY (account_id, code_hash)
);
