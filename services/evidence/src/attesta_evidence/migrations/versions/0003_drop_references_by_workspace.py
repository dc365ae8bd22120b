"""Drop ``evidence_references_by_workspace``: no query reads references by workspace alone.

Every query on ``evidence_references`` has the content address in an equality (the batch's
state query, the public view's counts, one workspace's references of one content), which the
unique ``(sha256, kind, workspace_id, ref_id)`` index serves; the dropped index only cost one
B-tree insert per appended reference inside the append lock (docs/benchmarks/evidence.md).

Revision ID: 0003
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP INDEX evidence_references_by_workspace")


def downgrade() -> None:
    op.execute("CREATE INDEX evidence_references_by_workspace "
               "ON evidence_references (workspace_id, sha256)")
