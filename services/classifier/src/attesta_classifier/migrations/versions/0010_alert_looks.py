"""The repeated looks at a week share each rule's alpha (issue #25; docs/alerts.md, "Looking
many times").

- ``alert_looks``: one row per tested look at a (rule, week): after a schedule slot
  (``look`` = ``slot:<schedule>:<slot>``) or the week's close (``close``). ``level`` is the share
  of the rule's alpha this look spent (its adjusted p-value was held to it), ``spent`` the
  alpha the week's looks had spent after it, ``information`` the information fraction the look
  saw, ``fired`` whether the look found the change real and going the rule's way (an alert is
  still stored once per (rule, week): a later look that finds it again adds none). A
  (rule, week)'s state is the maximum ``spent`` and ``information`` of its rows and
  whether one is the close (``domain.alerts.Spending``). Inserted in the same transaction as
  the slot's or the close's evaluation row and the alerts it fired, so a redelivered slot spends
  nothing twice (and the primary key refuses a second row for one look). Append-only, like the
  alerts: a look that spent alpha cannot be taken back.

Revision ID: 0010
Revises: 0009
"""
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
CREATE TABLE alert_looks (
    rule_id      uuid NOT NULL REFERENCES alert_rules (rule_id),
    period_start timestamptz NOT NULL,
    look         text NOT NULL CHECK (length(look) BETWEEN 1 AND 500),
    information  double precision NOT NULL CHECK (information >= 0 AND information <= 1),
    level        double precision NOT NULL CHECK (level >= 0 AND level < 1),
    spent        double precision NOT NULL CHECK (spent >= 0 AND spent < 1),
    closing      boolean NOT NULL,
    p_adjusted   double precision,
    fired        boolean NOT NULL,
    looked_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rule_id, period_start, look)
);
CREATE TRIGGER alert_looks_no_update BEFORE UPDATE OR DELETE ON alert_looks
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER alert_looks_no_truncate BEFORE TRUNCATE ON alert_looks
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
""")


def downgrade() -> None:
    op.execute("DROP TABLE alert_looks")
