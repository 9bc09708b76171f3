-- Passkeys: WebAuthn credentials a person registered on the signed-in page. Only the public key
-- is kept (a dump hands out nothing that signs in). `id` is the credential id the authenticator
-- chose (base64url), which a discoverable sign-in names first; `counter` is the signature counter,
-- kept to notice a cloned authenticator (many passkeys always report 0).
CREATE TABLE IF NOT EXISTS passkeys (
  id           text PRIMARY KEY,
  account_id   bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  public_key   text NOT NULL,
  counter      bigint NOT NULL DEFAULT 0,
  transports   text NOT NULL DEFAULT '',
  name         text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz
);
CREATE INDEX IF NOT EXISTS passkeys_by_account ON passkeys (account_id, created_at);
