"""Create the classifier database and its least-privilege role, then run alembic to head.

Run with the admin URL (``attesta classifier migrate``). Idempotent: re-running changes nothing.
The app role gets only what the service needs:
- ``classification_history``, ``runs`` and ``judge_reviews``: SELECT, INSERT (append-only;
  triggers also refuse UPDATE/DELETE/TRUNCATE to anyone, the owner included);
- ``ground_truth_facts``: SELECT, INSERT, UPDATE of (active, superseded_at, refresh_id) only;
- the mutable state tables: SELECT, INSERT, UPDATE (DELETE only where state is consumed:
  ``pending_judgments``).
"""

from __future__ import annotations

from pathlib import Path

from attesta_platform.migrations import ServiceMigration

GRANTS = [
    "REVOKE ALL ON SCHEMA public FROM PUBLIC",
    "GRANT USAGE ON SCHEMA public TO {role}",
    "GRANT SELECT, INSERT ON classification_history, runs, judge_reviews, evidence_leaves TO {role}",
    "GRANT SELECT, INSERT ON ground_truth_facts TO {role}",
    "GRANT UPDATE (active, superseded_at, refresh_id) ON ground_truth_facts TO {role}",
    "GRANT SELECT, INSERT, UPDATE ON brands, run_brand_status, messaging_inbox TO {role}",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON pending_judgments TO {role}",
    "GRANT SELECT, INSERT, UPDATE ON messaging_outbox TO {role}",
    # alerts (issue #25): fired alerts are append-only; rules and channels are soft-deleted
    "GRANT SELECT, INSERT ON alerts, alert_evaluations, alert_slot_evaluations, alert_looks "
    "TO {role}",
    "GRANT SELECT, INSERT, UPDATE ON alert_rules, alert_channels, alert_deliveries TO {role}",
    "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}",
]

MIGRATION = ServiceMigration("classifier", Path(__file__).resolve().parents[1] / "migrations",
                             GRANTS, database_privileges="CONNECT, TEMPORARY")
migrate = MIGRATION.migrate
