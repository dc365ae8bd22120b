"""Create the evidence database and its least-privilege role, then run alembic to head.

Run with the admin URL (``attesta evidence migrate``). Idempotent. The app role may only SELECT
and INSERT the evidence tables (plus mark outbox rows published); it owns nothing, so it cannot
drop or disable the append-only triggers either.
"""

from __future__ import annotations

from pathlib import Path

from attesta_platform.migrations import ServiceMigration

GRANTS = [
    "REVOKE ALL ON SCHEMA public FROM PUBLIC",
    "GRANT USAGE ON SCHEMA public TO {role}",
    "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}",
    "GRANT SELECT, INSERT ON evidence, evidence_references, log_nodes, tree_heads TO {role}",
    "GRANT SELECT, INSERT ON messaging_outbox TO {role}",
    "GRANT UPDATE (published_at) ON messaging_outbox TO {role}",
    "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}",
]
MIGRATION = ServiceMigration("evidence", Path(__file__).resolve().parents[1] / "migrations",
                             GRANTS)
migrate = MIGRATION.migrate
