"""References of a third kind: ``engine_response``, an AI engine's raw response body that the
collector recorded a run from (referenced by the run id).

Revision ID: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE evidence_references DROP CONSTRAINT evidence_references_kind_check, "
               "ADD CONSTRAINT evidence_references_kind_check "
               "CHECK (kind IN ('run', 'ground_truth_source', 'engine_response'))")


def downgrade() -> None:
    raise NotImplementedError("evidence is append-only: a downgrade would drop references")
