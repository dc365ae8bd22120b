"""Evidence store, references, Merkle log nodes, signed tree heads, outbox.

Append-only is enforced here, not by convention: the CHECKs bind each key to its bytes, and
triggers refuse UPDATE, DELETE and TRUNCATE to everyone, the owner included (only a superuser
who disables the triggers can change a row, which the signed log then exposes).

Revision ID: 0001
"""

from __future__ import annotations

from alembic import op

from attesta_platform.outbox import OUTBOX_DDL

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

APPEND_ONLY = ("evidence", "evidence_references", "log_nodes", "tree_heads")


def upgrade() -> None:
    op.execute("""
CREATE TABLE evidence (
    sha256            text        PRIMARY KEY,
    content           bytea       NOT NULL,
    media_type        text        NOT NULL,
    size_bytes        bigint      NOT NULL,
    first_recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    log_index         bigint      NOT NULL UNIQUE,
    CONSTRAINT evidence_key_is_sha256_of_content CHECK (sha256 = encode(sha256(content), 'hex')),
    CONSTRAINT evidence_size_is_content_length CHECK (size_bytes = octet_length(content)),
    CONSTRAINT evidence_media_type_one_line CHECK (
        media_type <> '' AND length(media_type) <= 255 AND media_type !~ '[\\n\\r]'),
    CONSTRAINT evidence_log_index_non_negative CHECK (log_index >= 0)
);

CREATE TABLE evidence_references (
    id           bigserial   PRIMARY KEY,
    sha256       text        NOT NULL REFERENCES evidence (sha256),
    kind         text        NOT NULL CHECK (kind IN ('run', 'ground_truth_source')),
    ref_id       text        NOT NULL CHECK (ref_id <> ''),
    workspace_id text        NOT NULL CHECK (workspace_id <> ''),
    recorded_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT evidence_references_once UNIQUE (sha256, kind, workspace_id, ref_id)
);
CREATE INDEX evidence_references_by_workspace ON evidence_references (workspace_id, sha256);

-- Every perfect subtree of the RFC 9162 tree: level L, index i covers leaves [i*2^L, (i+1)*2^L).
-- Level 0 holds the leaf hashes. Proofs read O(log n) of these rows.
CREATE TABLE log_nodes (
    level smallint NOT NULL CHECK (level >= 0 AND level < 63),
    idx   bigint   NOT NULL CHECK (idx >= 0),
    hash  bytea    NOT NULL CHECK (octet_length(hash) = 32),
    PRIMARY KEY (level, idx)
);

CREATE TABLE tree_heads (
    id           bigserial PRIMARY KEY,
    tree_size    bigint    NOT NULL CHECK (tree_size >= 0),
    root_hash    bytea     NOT NULL CHECK (octet_length(root_hash) = 32),
    timestamp_ms bigint    NOT NULL CHECK (timestamp_ms >= 0),
    signature    text      NOT NULL,
    key_id       text      NOT NULL,
    CONSTRAINT tree_heads_once_per_size_and_key UNIQUE (tree_size, key_id)
);

CREATE FUNCTION evidence_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'attesta evidence is append-only: % on % is refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'raise_exception';
END
$$;
""")
    for table in APPEND_ONLY:
        op.execute(f"""
CREATE TRIGGER {table}_no_update_delete BEFORE UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION evidence_refuse_change();
CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION evidence_refuse_change();
""")
    op.execute(OUTBOX_DDL)


def downgrade() -> None:
    raise NotImplementedError("the evidence store is append-only; there is no downgrade")
