"""People in the loop (issue #28): a person's label is a history row like any other, and blind
reviews of the judge's own labels measure judge-human agreement.

- ``classification_history``: ``decided_by`` may be ``human`` (with the ``reviewer``, the API
  key's name, and an optional ``note``), ``trigger`` may be ``review``. The append-only triggers
  are untouched: the table still refuses UPDATE, DELETE and TRUNCATE.
- ``pending_judgments.judgment``: what the judge left on a pair it could not decide (its reason
  and per-claim verdicts), shown to the reviewer.
- ``judge_reviews``: one blind review per judge label of the agreement sample; append-only like
  the history. It does not change the pair's class (docs/review.md says why).
- a partial index on pending pairs: the queue and its age are read per workspace.

Revision ID: 0003
Revises: 0002
"""
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE classification_history
    ADD COLUMN reviewer text CHECK (length(reviewer) BETWEEN 1 AND 200),
    ADD COLUMN note text CHECK (length(note) <= 2000),
    DROP CONSTRAINT classification_history_decided_by_check,
    ADD CONSTRAINT classification_history_decided_by_check
        CHECK (decided_by IN ('deterministic', 'judge', 'human')),
    DROP CONSTRAINT classification_history_trigger_check,
    ADD CONSTRAINT classification_history_trigger_check
        CHECK (trigger IN ('live', 'reverification', 'backfill', 'manual', 'review')),
    ADD CONSTRAINT classification_history_human_has_reviewer
        CHECK (decided_by <> 'human' OR reviewer IS NOT NULL);

ALTER TABLE pending_judgments ADD COLUMN judgment jsonb;

CREATE INDEX run_brand_status_pending ON run_brand_status (workspace_id) WHERE status = 'pending';

CREATE TABLE judge_reviews (
    review_id         uuid PRIMARY KEY,
    workspace_id      text NOT NULL,
    run_id            text NOT NULL REFERENCES runs (run_id),
    brand_id          text NOT NULL,
    -- the judge's label reviewed; its class and model are read from the (append-only) history
    classification_id uuid NOT NULL UNIQUE REFERENCES classification_history (classification_id),
    human_class       text NOT NULL CHECK (human_class IN
                          ('STRONG', 'DESCRIPTIVE', 'ECHO', 'CONFABULATED', 'ABSENT')),
    ground_truth_hash text NOT NULL CHECK (ground_truth_hash ~ '^[0-9a-f]{64}$'),
    reviewer          text NOT NULL CHECK (length(reviewer) BETWEEN 1 AND 200),
    actor             text,
    note              text CHECK (length(note) <= 2000),
    reviewed_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX judge_reviews_workspace ON judge_reviews (workspace_id, reviewed_at);

CREATE TRIGGER judge_reviews_no_update BEFORE UPDATE OR DELETE ON judge_reviews
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER judge_reviews_no_truncate BEFORE TRUNCATE ON judge_reviews
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
"""

# Fails while human labels exist: the old CHECKs cannot hold them, and history is never rewritten.
DOWNGRADE = r"""
DROP TABLE judge_reviews;
DROP INDEX run_brand_status_pending;
ALTER TABLE pending_judgments DROP COLUMN judgment;
ALTER TABLE classification_history
    DROP CONSTRAINT classification_history_human_has_reviewer,
    DROP CONSTRAINT classification_history_trigger_check,
    ADD CONSTRAINT classification_history_trigger_check
        CHECK (trigger IN ('live', 'reverification', 'backfill', 'manual')),
    DROP CONSTRAINT classification_history_decided_by_check,
    ADD CONSTRAINT classification_history_decided_by_check
        CHECK (decided_by IN ('deterministic', 'judge')),
    DROP COLUMN note,
    DROP COLUMN reviewer;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
