"""Alert rules may watch every figure of the metrics rows (issue #25): share of voice, each
source share, share named first, mean position and the score, besides the citation and
confabulation rates (docs/alerts.md). Only the rule's CHECK widens; stored rules and alerts are
unchanged.

Revision ID: 0008
Revises: 0007
"""
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

METRICS = ("citation_rate", "confabulation_rate", "share_of_voice", "source_share_owned",
           "source_share_competitor", "source_share_third_party", "position_first",
           "position_mean", "score")
BEFORE = ("citation_rate", "confabulation_rate")


def _check(metrics: tuple[str, ...]) -> None:
    listed = ", ".join(f"'{m}'" for m in metrics)
    op.execute("ALTER TABLE alert_rules DROP CONSTRAINT alert_rules_metric_check")
    op.execute(f"ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_metric_check "
               f"CHECK (metric IN ({listed}))")


def upgrade() -> None:
    _check(METRICS)


def downgrade() -> None:
    # Refused by PostgreSQL while a rule watches a new metric: delete those rules first.
    _check(BEFORE)
