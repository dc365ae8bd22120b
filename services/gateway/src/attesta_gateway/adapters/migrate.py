"""``attesta gateway migrate``: the database, its least-privilege app role, the schema.

Run with the admin URL (``ATTESTA_PG_ADMIN_URL``). The app role, its password and the database
name are read from the gateway's own URL (``ATTESTA_GATEWAY_DATABASE_URL``), so the one URL the
gateway connects with is also the one thing to configure. Safe to run again: every step is
"if missing", then alembic upgrades to head.

The app role gets exactly what the gateway does: read keys, add keys, set ``revoked_at``,
``revoked_by`` and ``last_used_at`` (a trigger refuses anything else), and read/write idempotency records. No DDL,
no DELETE on keys.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from attesta_platform.migrations import ServiceMigration

GRANTS = [
    "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
    "GRANT USAGE ON SCHEMA public TO {role}",
    "GRANT SELECT, INSERT ON api_keys TO {role}",
    "GRANT UPDATE (revoked_at, revoked_by, last_used_at) ON api_keys TO {role}",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_records TO {role}",
]

MIGRATION = ServiceMigration("gateway", Path(__file__).resolve().parents[1] / "migrations", GRANTS)


def migrate(admin_url: str, app_url: str) -> str:
    """Create/upgrade (attesta_platform.migrations); returns the database name."""
    app = urlsplit(app_url)
    role, password = unquote(app.username or ""), unquote(app.password or "")
    database = app.path.lstrip("/")
    if not role or not password or not database:
        raise ValueError("ATTESTA_GATEWAY_DATABASE_URL needs a user, a password and a database")
    MIGRATION.run(admin_url, database, role, password)
    return database
