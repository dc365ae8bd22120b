"""Create the evidence database and its least-privilege role, then run alembic to head.

Run with the admin URL (``attesta evidence migrate``). Idempotent. The app role may only SELECT
and INSERT the evidence tables (plus mark outbox rows published); it owns nothing, so it cannot
drop or disable the append-only triggers either.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from attesta_platform.logs import get_logger
from attesta_platform.migrations import migrate_service_database, with_database

log = get_logger("attesta.evidence.migrate")

GRANTS = [
    "REVOKE ALL ON SCHEMA public FROM PUBLIC",
    "GRANT USAGE ON SCHEMA public TO {role}",
    "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}",
    "GRANT SELECT, INSERT ON evidence, evidence_references, log_nodes, tree_heads TO {role}",
    "GRANT SELECT, INSERT ON messaging_outbox TO {role}",
    "GRANT UPDATE (published_at) ON messaging_outbox TO {role}",
    "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}",
]

__all__ = ["GRANTS", "migrate", "migrations_dir", "with_database"]


def migrations_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "migrations"


async def migrate(admin_url: str, database: str, role: str, password: str) -> None:
    """Everything ``attesta evidence migrate`` does (attesta_platform.migrations)."""
    await asyncio.to_thread(
        migrate_service_database, admin_url=admin_url, database=database, role=role,
        password=password, script_location=migrations_dir(), grants=GRANTS)
    log.info("evidence database migrated", database=database, role=role)
