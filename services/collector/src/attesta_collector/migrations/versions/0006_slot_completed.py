"""When a schedule slot was completed (issue #25: alerts are evaluated after each slot).

``planned_slots.completed_at`` is set, once, by the collector's slot sweeper when every planned
sample of the slot was collected or given up; ``collection.slot-completed.v1`` is staged in the
same transaction. The partial index keeps the sweep to the open slots, however long the history.

Slots already over when this revision runs are marked completed at their last sample's finish:
no event is published for history (the classifier would evaluate old slots for nothing).

Revision ID: 0006
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE planned_slots ADD COLUMN completed_at timestamptz")
    op.execute(
        "UPDATE planned_slots s SET completed_at = coalesce(("
        "  SELECT max(c.finished_at) FROM collections c WHERE c.workspace_id = s.workspace_id "
        "  AND c.schedule_id = s.schedule_id AND c.slot = s.slot), s.planned_at) "
        "WHERE NOT EXISTS (SELECT 1 FROM collections c WHERE c.workspace_id = s.workspace_id "
        "  AND c.schedule_id = s.schedule_id AND c.slot = s.slot "
        "  AND c.status IN ('pending', 'awaiting_reply'))")
    op.execute("CREATE INDEX planned_slots_open ON planned_slots (slot) "
               "WHERE completed_at IS NULL")


def downgrade() -> None:
    op.execute("DROP INDEX planned_slots_open")
    op.execute("ALTER TABLE planned_slots DROP COLUMN completed_at")
