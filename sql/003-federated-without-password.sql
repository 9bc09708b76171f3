-- Federated accounts check their password against the directory: they may have no
-- local password hash at all (just-in-time provisioned, or added without one).
ALTER TABLE users ALTER COLUMN password_hash DROP NOT NULL;
