-- The account's revocation epoch (issue 20 §1): every change that ends the account's tokens
-- (disable, new password, revoke-all) adds one in the same UPDATE. A Login carries the value
-- it read before checking the password, and the token store refuses to issue on a value older
-- than the one the revocation left beside the account's tokens: a Login overtaken by a
-- revocation gets no token.
ALTER TABLE users ADD COLUMN IF NOT EXISTS token_epoch bigint NOT NULL DEFAULT 0;
