"""The position of the brand in each answer (issue #25 item 3), stored with the classification:
``named_order`` is the ids of the brand and its competitors in the order the answer first names
them (those not named left out), ``position`` the brand's place in it (1 = first; null = not
named). Both are written with every history row (first classification, reclassification,
reverification, a person's label) and copied onto the pair's current state, in the same
transaction (``domain/position.py``, docs/metrics.md "Position").

History stays append-only: rows appended before this revision keep ``named_order`` null ("not
computed", which the metrics leave out), unlike an empty array ("no brand of the set named").

Revision ID: 0006
Revises: 0005
"""
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

COLUMNS = ("ADD COLUMN position integer CHECK (position >= 1), ADD COLUMN named_order text[], "
           "ADD CONSTRAINT {table}_position_named CHECK (position IS NULL OR named_order IS NOT NULL)")


def upgrade() -> None:
    for table in ("classification_history", "run_brand_status"):
        op.execute(f"ALTER TABLE {table} " + COLUMNS.format(table=table))


def downgrade() -> None:
    for table in ("run_brand_status", "classification_history"):
        op.execute(f"ALTER TABLE {table} DROP CONSTRAINT {table}_position_named, "
                   "DROP COLUMN named_order, DROP COLUMN position")
