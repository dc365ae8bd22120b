"""Collections keep the prompt set and tags they were planned with (like the prompt text), so
each collected run carries them to the classifier's metrics (split by prompt tag).

Revision ID: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE collections ADD COLUMN prompt_set text, "
               "ADD COLUMN prompt_tags jsonb NOT NULL DEFAULT '{}'::jsonb")


def downgrade() -> None:
    raise NotImplementedError("the collector's history is not dropped by a downgrade")
