-- Accounts. Usernames are NFC-normalized by the service before they reach this
-- table and compared exactly (case kept), hence a plain unique text column.
CREATE TABLE IF NOT EXISTS users (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  username      text NOT NULL UNIQUE CHECK (char_length(username) BETWEEN 1 AND 256),
  -- argon2id in PHC string form.
  password_hash text NOT NULL,
  federated     boolean NOT NULL DEFAULT false,
  disabled      boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
