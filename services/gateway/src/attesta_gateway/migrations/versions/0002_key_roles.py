"""Roles of API keys (viewer, editor, admin), when each key was last used, and who created and
revoked it (issue #25).

Every key that exists when this runs becomes ``admin``: before roles, every key could do
everything, so no one loses access by the upgrade. A key's role is fixed at creation (the
trigger refuses a change, like any other column but ``revoked_at`` and ``last_used_at``).

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The DEFAULT fills the existing rows; new keys always name their role (the key store).
    op.execute("ALTER TABLE api_keys ADD COLUMN role text NOT NULL DEFAULT 'admin' "
               "CHECK (role IN ('viewer', 'editor', 'admin'))")
    op.execute("ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz")
    # Who: the key id of the admin key that called the API, 'cli' for the operator's CLI;
    # NULL for keys created before this revision (not recorded then).
    op.execute("ALTER TABLE api_keys ADD COLUMN created_by text CHECK (length(created_by) <= 40)")
    op.execute("ALTER TABLE api_keys ADD COLUMN revoked_by text CHECK (length(revoked_by) <= 40)")
    # The last-admin check counts a workspace's active admins.
    op.execute("CREATE INDEX api_keys_active_admins ON api_keys (workspace_id) "
               "WHERE role = 'admin' AND revoked_at IS NULL")
    op.execute("""
    CREATE OR REPLACE FUNCTION api_keys_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.key_id <> OLD.key_id OR NEW.workspace_id <> OLD.workspace_id
           OR NEW.digest <> OLD.digest OR NEW.created_at <> OLD.created_at
           OR NEW.role <> OLD.role OR NEW.name <> OLD.name
           OR NEW.created_by IS DISTINCT FROM OLD.created_by THEN
            RAISE EXCEPTION 'api_keys: only revoked_at, revoked_by and last_used_at may change';
        END IF;
        IF OLD.revoked_at IS NOT NULL AND (NEW.revoked_at IS DISTINCT FROM OLD.revoked_at
                                           OR NEW.revoked_by IS DISTINCT FROM OLD.revoked_by) THEN
            RAISE EXCEPTION 'api_keys: a revoked key cannot be restored';
        END IF;
        RETURN NEW;
    END $$""")


def downgrade() -> None:
    op.execute("""
    CREATE OR REPLACE FUNCTION api_keys_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
    op.execute("DROP INDEX api_keys_active_admins")
    op.execute("ALTER TABLE api_keys DROP COLUMN revoked_by")
    op.execute("ALTER TABLE api_keys DROP COLUMN created_by")
    op.execute("ALTER TABLE api_keys DROP COLUMN last_used_at")
    op.execute("ALTER TABLE api_keys DROP COLUMN role")
