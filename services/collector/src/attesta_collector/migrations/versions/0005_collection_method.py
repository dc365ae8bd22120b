"""How each answer was collected (issue #25 item 4).

- Every stored engine's spec gets an explicit ``collection_method`` (``EngineSpec`` derives it
  the same way for a spec without one: ``assistant`` for our own assistant, ``api_with_search``
  for an engine whose params turn on a web search or whose model is an ``:online`` variant,
  ``api`` otherwise), so the stored specs say what the API returns and no reader has to derive
  it again.
- ``collections`` keeps, per collected sample, the engine's method at collection time and the
  model build the endpoint reported (``model``, ``system_fingerprint``, and ``notes`` saying
  why a reported value was truncated or dropped). Samples collected before this revision keep
  NULL in both: unknown, not guessed.

Revision ID: 0005
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# A frozen copy of attesta_contracts.api.collector's SEARCH_PARAMS and derivation as of this
# revision: a migration must do the same thing however the code changes later.
_SEARCH_PARAMS = frozenset({"web_search", "enable_search", "search_mode", "search_context_size",
                            "search_recency_filter", "search_after_date_filter",
                            "search_before_date_filter"})


def derived_collection_method(kind: str, model: str, params: dict[str, Any]) -> str:
    if kind == "assistant":
        return "assistant"
    searches = any(k in _SEARCH_PARAMS and v is not False for k, v in params.items())
    return "api_with_search" if searches or model.endswith(":online") else "api"


def upgrade() -> None:
    op.execute("ALTER TABLE collections ADD COLUMN collection_method text "
               "CHECK (collection_method IN ('api', 'api_with_search', 'assistant')), "
               "ADD COLUMN model_build jsonb")
    conn = op.get_bind()
    rows = conn.execute(sa.text(
        "SELECT workspace_id, engine_id, spec FROM engines "
        "WHERE NOT spec ? 'collection_method' OR spec->'collection_method' = 'null'::jsonb "
        "ORDER BY workspace_id, engine_id"))
    for ws, engine_id, spec in rows.all():
        spec = spec if isinstance(spec, dict) else json.loads(spec)
        params = spec.get("params")
        params = params if isinstance(params, dict) else {}
        method = derived_collection_method(str(spec.get("kind") or "openai"),
                                           str(spec.get("model") or ""), params)
        # updated_at is left alone: the engine did not change, its stored form became explicit.
        conn.execute(sa.text("UPDATE engines SET spec = jsonb_set(spec, '{collection_method}', "
                             "to_jsonb(CAST(:method AS text))) "
                             "WHERE workspace_id = :ws AND engine_id = :id"),
                     {"method": method, "ws": ws, "id": engine_id})


def downgrade() -> None:
    raise NotImplementedError("the collector's history is not dropped by a downgrade")
