"""Classified runs written straight into the classifier's tables, for tests that need weeks of
history (alert looks and slot evaluations) faster than the pipeline would record them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

RUN_COLUMNS = ("run_id, workspace_id, engine, model, prompt, answer, answer_sha256, "
               "answered_at, collection_method")
# run_id, brand_id, workspace_id, classification_id, citation_class, position, named_order
STATUS_COLUMNS = ("run_id, brand_id, workspace_id, status, classification_id, citation_class, "
                  "decided_by, position, named_order")


async def insert_classified_runs(pool: Any, runs: Sequence[tuple[Any, ...]],
                                 states: Sequence[tuple[Any, ...]]) -> None:
    """``runs``: one tuple per ``RUN_COLUMNS``; ``states``: (run_id, brand_id, workspace_id,
    classification_id, citation_class, position, named_order), stored as classified by the
    deterministic path."""
    async with pool.acquire() as conn:
        await conn.executemany(
            f"INSERT INTO runs ({RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)", runs)
        await conn.executemany(
            f"INSERT INTO run_brand_status ({STATUS_COLUMNS}) "
            "VALUES ($1, $2, $3, 'classified', $4, $5, 'deterministic', $6, $7)", states)
