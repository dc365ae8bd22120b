"""Prompts, engines, schedules, planned slots, collections, raw engine responses, outbox, inbox.

History is kept by the database, not by convention: prompts, engines and schedules are retired,
never deleted (a trigger refuses DELETE and TRUNCATE); raw responses are content-addressed
(CHECK sha256 = sha256(body)) and append-only; a collection keeps the prompt text it asked.

Revision ID: 0001
"""

from __future__ import annotations

from alembic import op

from attesta_platform.inbox import INBOX_DDL
from attesta_platform.outbox import OUTBOX_DDL

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
CREATE TABLE prompts (
    workspace_id      text        NOT NULL,
    prompt_id         text        NOT NULL,
    prompt_set        text        NOT NULL,
    text              text        NOT NULL,
    locale            text        NOT NULL,
    tags              jsonb       NOT NULL DEFAULT '{}'::jsonb,
    brand_ids         text[]      NOT NULL DEFAULT '{}',
    branded           boolean     NOT NULL,
    branded_brand_ids text[]      NOT NULL DEFAULT '{}',
    prompt_key        text        NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    retired_at        timestamptz,
    PRIMARY KEY (workspace_id, prompt_id),
    UNIQUE (workspace_id, prompt_key)
);
CREATE INDEX prompts_live ON prompts (workspace_id, prompt_set) WHERE retired_at IS NULL;

CREATE TABLE engines (
    workspace_id text        NOT NULL,
    engine_id    text        NOT NULL,
    spec         jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    retired_at   timestamptz,
    PRIMARY KEY (workspace_id, engine_id)
);

CREATE TABLE schedules (
    workspace_id    text        NOT NULL,
    schedule_id     text        NOT NULL,
    spec            jsonb       NOT NULL,
    active          boolean     NOT NULL DEFAULT true,
    planned_through timestamptz,
    next_due_at     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    retired_at      timestamptz,
    PRIMARY KEY (workspace_id, schedule_id)
);
CREATE INDEX schedules_due ON schedules (next_due_at) WHERE active AND retired_at IS NULL;

-- One row per planned (schedule, slot): the unit a planner claims, and the record of how many
-- missed slots the policy skipped before it.
CREATE TABLE planned_slots (
    workspace_id   text        NOT NULL,
    schedule_id    text        NOT NULL,
    slot           timestamptz NOT NULL,
    collections    integer     NOT NULL,
    skipped_before integer     NOT NULL DEFAULT 0,
    trigger        text        NOT NULL,
    planned_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, schedule_id, slot)
);

CREATE TABLE raw_responses (
    sha256      text        PRIMARY KEY,
    body        bytea       NOT NULL,
    stored_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (sha256 = encode(sha256(body), 'hex'))
);

CREATE TABLE collections (
    collection_id   text        PRIMARY KEY,
    workspace_id    text        NOT NULL,
    schedule_id     text        NOT NULL,
    prompt_id       text        NOT NULL,
    engine_id       text        NOT NULL,
    slot            timestamptz NOT NULL,
    sample          integer     NOT NULL,
    prompt_text     text        NOT NULL,
    brand_ids       text[]      NOT NULL DEFAULT '{}',
    status          text        NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'awaiting_reply', 'collected', 'failed')),
    claims          integer     NOT NULL DEFAULT 0,
    attempts        integer     NOT NULL DEFAULT 0,
    lease_owner     text,
    lease_until     timestamptz,
    last_error      text,
    run_id          text,
    model           text,
    answer_sha256   text,
    raw_sha256      text REFERENCES raw_responses (sha256),
    latency_ms      double precision,
    usage           jsonb,
    sources         jsonb,
    requested_at    timestamptz,
    finished_at     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (schedule_id, prompt_id, engine_id, slot, sample, workspace_id)
);
CREATE INDEX collections_claimable ON collections (workspace_id, engine_id, slot)
    WHERE status = 'pending';
CREATE INDEX collections_awaiting ON collections (requested_at) WHERE status = 'awaiting_reply';
CREATE INDEX collections_by_schedule ON collections (workspace_id, schedule_id, slot);

CREATE FUNCTION collector_refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'collector history is never deleted (% on %): retire instead',
        TG_OP, TG_TABLE_NAME;
END $$;
""")
    for table in ("prompts", "engines", "schedules", "collections", "planned_slots",
                  "raw_responses"):
        op.execute(f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} "
                   f"FOR EACH ROW EXECUTE FUNCTION collector_refuse_delete()")
        op.execute(f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                   f"FOR EACH STATEMENT EXECUTE FUNCTION collector_refuse_delete()")
    op.execute("CREATE TRIGGER raw_responses_no_update BEFORE UPDATE ON raw_responses "
               "FOR EACH ROW EXECUTE FUNCTION collector_refuse_delete()")
    op.execute(OUTBOX_DDL)
    op.execute(INBOX_DDL)


def downgrade() -> None:
    raise NotImplementedError("the collector's history is not dropped by a downgrade")
