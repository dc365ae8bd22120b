"""A schedule that cannot be planned keeps its error where the API and the web app show it,
instead of stalling the planner for every workspace: the last planning error, when it happened
and how many times in a row it failed (cleared by the next successful plan or an update).

Revision ID: 0003
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE schedules ADD COLUMN plan_error text, "
               "ADD COLUMN plan_error_at timestamptz, "
               "ADD COLUMN plan_failures integer NOT NULL DEFAULT 0")


def downgrade() -> None:
    raise NotImplementedError("the collector's history is not dropped by a downgrade")
