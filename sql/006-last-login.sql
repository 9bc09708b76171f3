-- When the account last logged in (issue 21, the admin API's `last_login`): written by a
-- successful Login, best effort (a failed write never fails the Login). Null: never since.
ALTER TABLE users ADD COLUMN IF NOT EXISTS last_login_at timestamptz;
-- The admin API pages accounts by username (keyset): the UNIQUE constraint's index serves it.
