"""Create the collector database and its least-privilege role, then run alembic to head
(``attesta collector migrate``; idempotent, attesta_platform.migrations)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from attesta_platform.logs import get_logger
from attesta_platform.migrations import migrate_service_database

log = get_logger("attesta.collector.migrate")

GRANTS = [
    "REVOKE ALL ON SCHEMA public FROM PUBLIC",
    "GRANT USAGE ON SCHEMA public TO {role}",
    "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}",
    "GRANT SELECT, INSERT, UPDATE ON prompts, engines, schedules, collections TO {role}",
    "GRANT SELECT, INSERT ON planned_slots, raw_responses TO {role}",
    "GRANT SELECT, INSERT ON messaging_outbox, messaging_inbox TO {role}",
    "GRANT UPDATE (published_at) ON messaging_outbox TO {role}",
    "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}",
]


def migrations_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "migrations"


async def migrate(admin_url: str, database: str, role: str, password: str) -> None:
    await asyncio.to_thread(
        migrate_service_database, admin_url=admin_url, database=database, role=role,
        password=password, script_location=migrations_dir(), grants=GRANTS)
    log.info("collector database migrated", database=database, role=role)
