"""The Merkle log's leaf index of each answer's bytes (issue #25 item 7), from the evidence
service's ``evidence.recorded.v1``: ``sha256`` -> ``log_index``, so a run export can name the
leaf a reader verifies offline (docs/metrics.md "Verify an export offline").

One row per SHA-256, never changed: a second event for the same bytes with another index keeps
the first (the log's first leaf for those bytes); the app role may only SELECT and INSERT.

Revision ID: 0007
Revises: 0006
"""
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE TABLE evidence_leaves ("
        " sha256 text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),"
        " log_index bigint NOT NULL CHECK (log_index >= 0),"
        " seen_at timestamptz NOT NULL DEFAULT now())")


def downgrade() -> None:
    op.execute("DROP TABLE evidence_leaves")
