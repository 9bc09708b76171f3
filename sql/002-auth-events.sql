-- Audit trail of logins, logouts and account changes. Never holds a password or a token.
CREATE TABLE IF NOT EXISTS auth_events (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  occurred_at timestamptz NOT NULL,
  event       text NOT NULL,
  username    text,
  account_id  bigint,
  client_ip   text,
  user_agent  text,
  outcome     text NOT NULL
);
CREATE INDEX IF NOT EXISTS auth_events_by_time ON auth_events (occurred_at);
CREATE INDEX IF NOT EXISTS auth_events_by_user ON auth_events (username, occurred_at);

-- Append-only: rows are added, never changed or removed (an operator who must prune
-- old events drops this trigger deliberately, as the table's owner).
CREATE OR REPLACE FUNCTION auth_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'auth_events is append-only';
END
$$;
CREATE TRIGGER auth_events_no_update_or_delete BEFORE UPDATE OR DELETE ON auth_events
  FOR EACH ROW EXECUTE FUNCTION auth_events_append_only();
CREATE TRIGGER auth_events_no_truncate BEFORE TRUNCATE ON auth_events
  FOR EACH STATEMENT EXECUTE FUNCTION auth_events_append_only();
