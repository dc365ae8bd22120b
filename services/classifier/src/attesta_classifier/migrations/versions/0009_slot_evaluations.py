"""Alerts after each schedule slot (issue #25), and the position-weighted visibility as a rule's
metric (docs/alerts.md).

- ``alert_slot_evaluations``: one row per (workspace, schedule, slot) evaluated after the
  collector announced the slot completed (``collection.slot-completed.v1``). Inserted in the
  same transaction as the alerts it fired, so a redelivered event evaluates nothing twice.
  ``period_start`` is the open week the slot's runs were compared in.
- Fired alerts stay at most one per (rule, period): the unique index ``alerts_rule_period``
  (0004) already says so; the evaluations skip a rule that fired in that period before.
- ``alert_rules.metric`` may be ``position_weighted_visibility``.

Revision ID: 0009
Revises: 0008
"""
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

BEFORE = ("citation_rate", "confabulation_rate", "share_of_voice", "source_share_owned",
          "source_share_competitor", "source_share_third_party", "position_first",
          "position_mean", "score")
METRICS = (*BEFORE, "position_weighted_visibility")


def _check(metrics: tuple[str, ...]) -> None:
    listed = ", ".join(f"'{m}'" for m in metrics)
    op.execute("ALTER TABLE alert_rules DROP CONSTRAINT alert_rules_metric_check")
    op.execute(f"ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_metric_check "
               f"CHECK (metric IN ({listed}))")


def upgrade() -> None:
    _check(METRICS)
    op.execute("""
CREATE TABLE alert_slot_evaluations (
    workspace_id text NOT NULL,
    schedule_id  text NOT NULL,
    slot         timestamptz NOT NULL,
    period_start timestamptz NOT NULL,
    runs         integer NOT NULL,
    rules        integer NOT NULL,
    fired        integer NOT NULL,
    evaluated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, schedule_id, slot)
)""")


def downgrade() -> None:
    op.execute("DROP TABLE alert_slot_evaluations")
    # Refused by PostgreSQL while a rule watches the weighted visibility: delete those first.
    _check(BEFORE)
