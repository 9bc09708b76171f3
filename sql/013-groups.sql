-- Groups (api-contract, Groups and access rules). An account's membership, one row a group:
-- `source` 'local' (the admin API, the CLI) or 'directory' (a federated account's directory, read
-- at each Login and replaced as a whole). The same name may stand in both; a token carries their
-- union. `groups_version` goes up with every change of the account's groups, in the same statement:
-- Login reads it with the account, and the token store refuses to write an older set than one a
-- change already pushed to the account's live tokens (core/stores/redis/scripts.ts).
CREATE TABLE IF NOT EXISTS account_groups (
  account_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name       text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
  source     text NOT NULL CHECK (source IN ('local', 'directory')),
  added_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, source, name)
);
CREATE INDEX IF NOT EXISTS account_groups_by_name ON account_groups (name, account_id);
ALTER TABLE users ADD COLUMN IF NOT EXISTS groups_version bigint NOT NULL DEFAULT 0;
