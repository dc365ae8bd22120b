"""Engine secrets held by the server, and engines that no longer name the server's variables
or files.

- ``engine_secrets``: a workspace's engine keys, sealed (adapters/keys.py: a data key per
  secret wrapped by the operator's KEK; ``kek_id`` says which KEK). Never deleted (the trigger
  of 0001); retiring erases the sealed columns, and a retired row stays retired. A live name is
  unique per workspace.
- Existing engines: ``api_key_env`` / ``api_key_file`` leave the stored spec. A variable name
  ``X`` becomes ``operator_key: "X"``, which works only once the operator lists it for the
  engine's workspace (``ATTESTA_COLLECTOR_OPERATOR_KEYS={"<ws>": {"X": "env:X"}}``); a file
  becomes ``operator_key: "file-<12 hex of the path's SHA-256>"``, logged here with the path and
  the entry that keeps it working. Until the operator lists them, those engines' calls fail
  with ``no_key`` (nothing is sent without a key the operator allowed).

Revision ID: 0004
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import sqlalchemy as sa
from alembic import op

from attesta_platform.logs import get_logger

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def converted(spec: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(the spec without server-side key references, the file path it named or None)."""
    out = {k: v for k, v in spec.items() if k not in ("api_key_env", "api_key_file")}
    if spec.get("api_key_env"):
        out["operator_key"] = str(spec["api_key_env"])
        return out, None
    if spec.get("api_key_file"):
        path = str(spec["api_key_file"])
        out["operator_key"] = "file-" + hashlib.sha256(path.encode("utf-8")).hexdigest()[:12]
        return out, path
    return out, None


def upgrade() -> None:
    op.execute("""
CREATE TABLE engine_secrets (
    workspace_id text        NOT NULL,
    secret_id    text        NOT NULL,
    name         text        NOT NULL,
    kek_id       text,
    wrapped_key  bytea,
    ciphertext   bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    retired_at   timestamptz,
    PRIMARY KEY (workspace_id, secret_id),
    CHECK ((retired_at IS NULL) = (ciphertext IS NOT NULL AND wrapped_key IS NOT NULL
                                   AND kek_id IS NOT NULL))
);
CREATE UNIQUE INDEX engine_secrets_live_name ON engine_secrets (workspace_id, name)
    WHERE retired_at IS NULL;

CREATE FUNCTION engine_secrets_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.workspace_id <> OLD.workspace_id OR NEW.secret_id <> OLD.secret_id
       OR NEW.name <> OLD.name OR NEW.created_at <> OLD.created_at
       OR NEW.ciphertext IS DISTINCT FROM OLD.ciphertext AND NEW.ciphertext IS NOT NULL
       OR OLD.retired_at IS NOT NULL AND NEW.retired_at IS DISTINCT FROM OLD.retired_at THEN
        RAISE EXCEPTION 'an engine secret keeps its identity and value; retire it instead';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER engine_secrets_guard BEFORE UPDATE ON engine_secrets
    FOR EACH ROW EXECUTE FUNCTION engine_secrets_guard();
CREATE TRIGGER engine_secrets_no_delete BEFORE DELETE ON engine_secrets
    FOR EACH ROW EXECUTE FUNCTION collector_refuse_delete();
CREATE TRIGGER engine_secrets_no_truncate BEFORE TRUNCATE ON engine_secrets
    FOR EACH STATEMENT EXECUTE FUNCTION collector_refuse_delete();
""")
    log = get_logger("attesta.collector.migrate")
    conn = op.get_bind()
    rows = conn.execute(sa.text(
        "SELECT workspace_id, engine_id, spec FROM engines "
        "WHERE spec ? 'api_key_env' OR spec ? 'api_key_file' ORDER BY workspace_id, engine_id"))
    for ws, engine_id, spec in rows.all():
        spec = spec if isinstance(spec, dict) else json.loads(spec)
        new_spec, path = converted(spec)
        conn.execute(sa.text("UPDATE engines SET spec = CAST(:spec AS jsonb), updated_at = now() "
                             "WHERE workspace_id = :ws AND engine_id = :id"),
                     {"spec": json.dumps(new_spec), "ws": ws, "id": engine_id})
        name = new_spec.get("operator_key")
        source = f"file:{path}" if path else f"env:{name}"
        log.warning("engine key reference moved to an operator key: it works once listed in "
                    "ATTESTA_COLLECTOR_OPERATOR_KEYS", workspace=ws, engine=engine_id,
                    operator_key=name, entry=json.dumps({ws: {name: source}}))


def downgrade() -> None:
    raise NotImplementedError("the collector's history is not dropped by a downgrade")
