"""API keys and idempotency records.

Revision ID: 0001
Revises:
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE api_keys (
        key_id       text PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{16}$'),
        workspace_id text NOT NULL CHECK (workspace_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$'),
        name         text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
        digest       text NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
        created_at   timestamptz NOT NULL DEFAULT now(),
        revoked_at   timestamptz
    )""")
    op.execute("CREATE INDEX api_keys_workspace ON api_keys (workspace_id)")
    # A revoked key stays revoked: the app role may only set revoked_at, and only once.
    op.execute("""
    CREATE FUNCTION api_keys_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.key_id <> OLD.key_id OR NEW.workspace_id <> OLD.workspace_id
           OR NEW.digest <> OLD.digest OR NEW.created_at <> OLD.created_at THEN
            RAISE EXCEPTION 'api_keys: only revoked_at may change';
        END IF;
        IF OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
            RAISE EXCEPTION 'api_keys: a revoked key cannot be restored';
        END IF;
        RETURN NEW;
    END $$""")
    op.execute("CREATE TRIGGER api_keys_guard BEFORE UPDATE ON api_keys "
               "FOR EACH ROW EXECUTE FUNCTION api_keys_guard()")
    op.execute("""
    CREATE TABLE idempotency_records (
        workspace_id text NOT NULL,
        idem_key     text NOT NULL CHECK (length(idem_key) BETWEEN 1 AND 255),
        fingerprint  text NOT NULL,
        state        text NOT NULL CHECK (state IN ('in_flight', 'completed')),
        locked_until timestamptz,
        status       integer,
        content_type text,
        body         bytea,
        created_at   timestamptz NOT NULL DEFAULT now(),
        expires_at   timestamptz NOT NULL,
        PRIMARY KEY (workspace_id, idem_key),
        CHECK (state = 'in_flight' OR (status IS NOT NULL AND body IS NOT NULL))
    )""")
    op.execute("CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at)")


def downgrade() -> None:
    op.execute("DROP TABLE idempotency_records")
    op.execute("DROP TABLE api_keys")
    op.execute("DROP FUNCTION api_keys_guard()")
