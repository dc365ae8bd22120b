"""Initial classifier schema: brands, ground-truth facts, runs, current state per (run, brand),
the append-only classification history, pending judgments, inbox and outbox.

Append-only is enforced here, by the database: triggers refuse UPDATE, DELETE and TRUNCATE on
``classification_history`` and ``runs``; ``ground_truth_facts`` refuses DELETE/TRUNCATE and any
UPDATE other than flipping ``active``/``superseded_at``. The app role's grants (see
``adapters/migrate.py``) are narrower still.

Revision ID: 0001
Revises:
Create Date: 2026-12-03
"""
from alembic import op

from attesta_platform.inbox import INBOX_DDL
from attesta_platform.outbox import OUTBOX_DDL

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE brands (
    workspace_id text NOT NULL,
    brand_id     text NOT NULL,
    name         text NOT NULL,
    aliases      text[] NOT NULL DEFAULT '{}',
    domains      text[] NOT NULL DEFAULT '{}',
    competitors  text[] NOT NULL DEFAULT '{}',
    sources      text[] NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, brand_id)
);

CREATE TABLE ground_truth_facts (
    fact_id        text PRIMARY KEY,
    workspace_id   text NOT NULL,
    brand_id       text NOT NULL,
    type           text NOT NULL,
    text           text NOT NULL CHECK (length(text) > 0),
    source_url     text NOT NULL,
    fetched_at     timestamptz NOT NULL,
    attribution    text NOT NULL,
    content_sha256 text NOT NULL CHECK (content_sha256 ~ '^[0-9a-f]{64}$'),
    active         boolean NOT NULL DEFAULT true,
    refresh_id     text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    superseded_at  timestamptz,
    FOREIGN KEY (workspace_id, brand_id) REFERENCES brands (workspace_id, brand_id)
);
CREATE INDEX ground_truth_facts_active ON ground_truth_facts (workspace_id, brand_id) WHERE active;

CREATE TABLE runs (
    run_id        text PRIMARY KEY,
    workspace_id  text NOT NULL,
    engine        text NOT NULL,
    model         text NOT NULL,
    prompt        text NOT NULL,
    answer        text NOT NULL,
    answer_sha256 text NOT NULL CHECK (answer_sha256 ~ '^[0-9a-f]{64}$'),
    brand_ids     text[] NOT NULL DEFAULT '{}',
    source        text NOT NULL DEFAULT 'external',
    requested_at  timestamptz,
    answered_at   timestamptz,
    recorded_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX runs_workspace_time ON runs (workspace_id, recorded_at DESC, run_id DESC);
CREATE INDEX runs_workspace_engine ON runs (workspace_id, engine);

-- The current class of each (run, brand) lives on the run side; history holds every decision.
CREATE TABLE run_brand_status (
    run_id            text NOT NULL REFERENCES runs (run_id),
    brand_id          text NOT NULL,
    workspace_id      text NOT NULL,
    status            text NOT NULL CHECK (status IN ('pending', 'classified', 'refused')),
    classification_id uuid,
    citation_class    text,
    decided_by        text,
    judge_model       text,
    ground_truth_hash text,
    reason            text,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, brand_id),
    CHECK (status <> 'classified' OR (classification_id IS NOT NULL AND citation_class IS NOT NULL))
);
CREATE INDEX run_brand_status_brand ON run_brand_status (workspace_id, brand_id);

CREATE TABLE classification_history (
    seq               bigserial UNIQUE,
    classification_id uuid PRIMARY KEY,
    run_id            text NOT NULL REFERENCES runs (run_id),
    brand_id          text NOT NULL,
    workspace_id      text NOT NULL,
    citation_class    text NOT NULL CHECK (citation_class IN
                          ('STRONG', 'DESCRIPTIVE', 'ECHO', 'CONFABULATED', 'ABSENT')),
    decided_by        text NOT NULL CHECK (decided_by IN ('deterministic', 'judge')),
    judge_model       text,
    ground_truth_hash text NOT NULL CHECK (ground_truth_hash ~ '^[0-9a-f]{64}$'),
    fact_ids          text[] NOT NULL DEFAULT '{}',
    reason            text NOT NULL,
    trigger           text NOT NULL CHECK (trigger IN ('live', 'reverification', 'backfill', 'manual')),
    trigger_reason    text,
    heuristic_version text NOT NULL,
    prompt_version    text,
    evidence_sha256   text NOT NULL CHECK (evidence_sha256 ~ '^[0-9a-f]{64}$'),
    actor             text,
    classified_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (decided_by <> 'judge' OR judge_model IS NOT NULL)
);
CREATE INDEX classification_history_run ON classification_history (run_id, brand_id, classified_at);

-- (run, brand) pairs waiting for the judge (ambiguous for the heuristic). The Kafka consumer
-- never waits for an LLM: it parks the pair here and a worker judges it, with backoff.
CREATE TABLE pending_judgments (
    run_id          text NOT NULL REFERENCES runs (run_id),
    brand_id        text NOT NULL,
    workspace_id    text NOT NULL,
    trigger         text NOT NULL,
    trigger_reason  text,
    actor           text,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    claim_token     uuid,  -- set by the worker that holds the lease (next_attempt_at in the future)
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, brand_id)
);
CREATE INDEX pending_judgments_due ON pending_judgments (next_attempt_at);

-- messaging_inbox and messaging_outbox: attesta_platform's DDL, executed in upgrade().

CREATE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER classification_history_no_update BEFORE UPDATE OR DELETE ON classification_history
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER classification_history_no_truncate BEFORE TRUNCATE ON classification_history
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER runs_no_update BEFORE UPDATE OR DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER runs_no_truncate BEFORE TRUNCATE ON runs
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- Facts are never deleted; only their active flag (and when it was superseded) may change.
CREATE FUNCTION facts_only_flag_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'ground_truth_facts: DELETE refused (facts are deactivated, never deleted)'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (NEW.fact_id, NEW.workspace_id, NEW.brand_id, NEW.type, NEW.text, NEW.source_url,
        NEW.fetched_at, NEW.attribution, NEW.content_sha256, NEW.created_at)
       IS DISTINCT FROM
       (OLD.fact_id, OLD.workspace_id, OLD.brand_id, OLD.type, OLD.text, OLD.source_url,
        OLD.fetched_at, OLD.attribution, OLD.content_sha256, OLD.created_at) THEN
        RAISE EXCEPTION 'ground_truth_facts: only active/superseded_at/refresh_id may change'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER ground_truth_facts_guard BEFORE UPDATE OR DELETE ON ground_truth_facts
    FOR EACH ROW EXECUTE FUNCTION facts_only_flag_changes();
CREATE TRIGGER ground_truth_facts_no_truncate BEFORE TRUNCATE ON ground_truth_facts
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS messaging_outbox, messaging_inbox, pending_judgments, classification_history,
    run_brand_status, runs, ground_truth_facts, brands CASCADE;
DROP FUNCTION IF EXISTS refuse_change() CASCADE;
DROP FUNCTION IF EXISTS facts_only_flag_changes() CASCADE;
"""


def upgrade() -> None:
    op.execute(UPGRADE)
    # Defined once in libs/platform (the same tables, columns and index every service has).
    op.execute(INBOX_DDL)
    op.execute(OUTBOX_DDL)


def downgrade() -> None:
    op.execute(DOWNGRADE)
