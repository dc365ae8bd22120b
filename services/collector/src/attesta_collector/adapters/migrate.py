"""Create the collector database and its least-privilege role, then run alembic to head
(``attesta collector migrate``; idempotent, attesta_platform.migrations)."""

from __future__ import annotations

from pathlib import Path

from attesta_platform.migrations import ServiceMigration

GRANTS = [
    "REVOKE ALL ON SCHEMA public FROM PUBLIC",
    "GRANT USAGE ON SCHEMA public TO {role}",
    "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}",
    "GRANT SELECT, INSERT, UPDATE ON prompts, engines, schedules, collections TO {role}",
    "GRANT SELECT, INSERT ON planned_slots, raw_responses TO {role}",
    # A slot is marked completed once (issue #25); nothing else of a planned slot changes.
    "GRANT UPDATE (completed_at) ON planned_slots TO {role}",
    # Engine secrets: added and retired (UPDATE; a trigger keeps identity and value), never read
    # back by the API except as metadata.
    "GRANT SELECT, INSERT, UPDATE ON engine_secrets TO {role}",
    "GRANT SELECT, INSERT ON messaging_outbox, messaging_inbox TO {role}",
    "GRANT UPDATE (published_at) ON messaging_outbox TO {role}",
    "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}",
]

MIGRATION = ServiceMigration("collector", Path(__file__).resolve().parents[1] / "migrations",
                             GRANTS)
migrate = MIGRATION.migrate
