-- Which account made an administrative change from the admin console: the signed-in person's
-- username, beside the credential column (which says how: `console`, `key:<fingerprint>`,
-- `local-cli`). Null for the admin API and the command line, which act as no account, and for
-- events a person's own requests make (logins, logouts).
ALTER TABLE auth_events ADD COLUMN IF NOT EXISTS actor text;
