"""Ambiguous pairs are parked and judged by the worker; an unavailable judge leaves them pending
with backoff (never guessed); a stale claim does not record twice."""

from __future__ import annotations

from functools import partial
import hashlib
import uuid
from datetime import UTC, datetime

import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.service_layer import brands as brand_svc
from attesta_classifier.service_layer import ground_truth as gt_svc
from attesta_classifier.service_layer.judge_worker import Backoff, judge_due
from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
from attesta_classifier.domain.commands import AddManualFact, CreateBrand, JudgeDuePairs, RecordRuns
from attesta_contracts.runs import RunRecorded

pytestmark = pytest.mark.integration

AMBIGUOUS = "Kestrel Labs has sold diagnostic kits in 40 countries since 1990."


async def _setup(pool, heuristic, workspace, n=3) -> list[str]:
    await brand_svc.create_brand(CreateBrand(workspace, "Kestrel Labs", "kestrel",
                                             domains=("kestrel.example",)), ClassifierUnitOfWork(pool))
    await gt_svc.add_manual_fact(AddManualFact(workspace, "kestrel", "manual", "Kestrel Labs makes test kits.",
                                               "https://kestrel.example/", "test"), ClassifierUnitOfWork(pool))
    ids = []
    at = datetime.now(UTC)
    for i in range(n):
        run_id = f"jw-{uuid.uuid4().hex}"
        payload = RunRecorded(run_id=run_id, workspace_id=workspace, engine="e", model="m", prompt="kits?",
                              answer=AMBIGUOUS, answer_sha256=hashlib.sha256(AMBIGUOUS.encode()).hexdigest(),
                              requested_at=at, answered_at=at)
        counts, _ = await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), payload, run_id),), "classifier", "live"),
                                      ClassifierUnitOfWork(pool), heuristic)
        assert counts["pending"] == 1, "the heuristic must leave this answer to the judge"
        ids.append(run_id)
    return ids


async def test_unavailable_judge_keeps_pairs_pending_then_judges(pool, heuristic, workspace, stand_in_judge):
    ids = await _setup(pool, heuristic, workspace)
    judge = stand_in_judge(down=True)
    counts = await judge_due(JudgeDuePairs(100), partial(ClassifierUnitOfWork, pool), judge, heuristic,
                             judge_backoff=Backoff(0.01, 0.02))
    assert counts["deferred"] >= 3 and judge.calls >= 3
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT status FROM run_brand_status WHERE run_id = ANY($1::text[])", ids)
        parked = await conn.fetch("SELECT attempts, last_error FROM pending_judgments WHERE run_id = ANY($1::text[])", ids)
        assert await conn.fetchval("SELECT count(*) FROM classification_history WHERE run_id = ANY($1::text[])", ids) == 0
    assert [r["status"] for r in rows] == ["pending"] * 3
    assert all(p["attempts"] == 1 and "JudgeUnavailable" in p["last_error"] for p in parked)

    judge.down = False
    import asyncio

    await asyncio.sleep(0.05)  # past the backoff
    for _ in range(20):
        await judge_due(JudgeDuePairs(100), partial(ClassifierUnitOfWork, pool), judge, heuristic)
        async with pool.acquire() as conn:
            left = await conn.fetchval("SELECT count(*) FROM pending_judgments WHERE run_id = ANY($1::text[])", ids)
        if not left:
            break
        await asyncio.sleep(0.05)
    async with pool.acquire() as conn:
        hist = await conn.fetch("SELECT citation_class, decided_by, judge_model, prompt_version, trigger, fact_ids "
                                "FROM classification_history WHERE run_id = ANY($1::text[])", ids)
        statuses = await conn.fetch("SELECT status, citation_class FROM run_brand_status WHERE run_id = ANY($1::text[])", ids)
    assert len(hist) == 3
    assert all((h["citation_class"], h["decided_by"], h["judge_model"], h["prompt_version"], h["trigger"])
               == ("DESCRIPTIVE", "judge", "stand-in-judge", "stand-in-1", "live") for h in hist)
    assert all(h["fact_ids"] for h in hist)
    assert {(s["status"], s["citation_class"]) for s in statuses} == {("classified", "DESCRIPTIVE")}


async def test_ground_truth_gone_at_judge_time_refuses(pool, heuristic, workspace, stand_in_judge):
    ids = await _setup(pool, heuristic, workspace, n=1)
    async with pool.acquire() as conn:
        await conn.execute("UPDATE ground_truth_facts SET active = false WHERE workspace_id = $1", workspace)
    judge = stand_in_judge()
    counts = await judge_due(JudgeDuePairs(100), partial(ClassifierUnitOfWork, pool), judge, heuristic)
    assert judge.calls == 0 or counts["refused"] >= 1
    async with pool.acquire() as conn:
        status = await conn.fetchrow("SELECT status, reason FROM run_brand_status WHERE run_id = $1", ids[0])
    assert status["status"] == "refused" and "no active ground truth" in status["reason"]
