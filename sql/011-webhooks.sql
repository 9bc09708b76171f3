-- Lifecycle events for webhooks: a durable outbox, one row per event and receiver URL. A row is
-- written in the same statement as the event's audit row and stays until the receiver took it
-- (or, after the retry window, is marked failed; an operator may retry it). Never a secret in it.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- The Standard Webhooks `webhook-id`: the same on every attempt, so receivers can deduplicate.
  event_id        text NOT NULL,
  url             text NOT NULL,
  type            text NOT NULL,
  -- The exact JSON body that is signed and sent.
  payload         text NOT NULL,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now(),
  -- Where the retry window starts: the event's creation, or a manual retry.
  window_start    timestamptz NOT NULL DEFAULT now(),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  -- Set by the instance that claimed the row: no other instance sends it before this passes.
  leased_until    timestamptz,
  last_error      text,
  delivered_at    timestamptz,
  UNIQUE (event_id, url)
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (url, next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_status ON webhook_deliveries (status, id);

-- The clients each account logged in from (user-agent family and network), for login.new_device:
-- a small record per account, pruned past 90 days, never a scan of auth_events.
CREATE TABLE IF NOT EXISTS login_devices (
  account_id bigint NOT NULL,
  device     text NOT NULL,
  last_seen  timestamptz NOT NULL,
  PRIMARY KEY (account_id, device)
);
