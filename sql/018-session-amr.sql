-- How each session's sign-in was made (RFC 8176 method names, comma-separated: `pwd`, `pwd,otp`
-- for a password and a code, `hwk` for a passkey), written by the Login that starts or refreshes
-- it, so that the OpenID Connect provider's `amr` claim says how the person signed in rather
-- than guessing from the account. Null for a session begun before this column.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS amr text;
