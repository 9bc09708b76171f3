-- Which credential made an administrative change (issue 30 §3): the configured admin key by its
-- fingerprint (`key:` and the first 8 hex digits of its SHA-256), `local-cli` for the command
-- line beside an embedded database, or a client of /auth/introspect. Null for events a person's
-- own requests make (logins, logouts). Never a key or a secret.
ALTER TABLE auth_events ADD COLUMN IF NOT EXISTS credential text;
