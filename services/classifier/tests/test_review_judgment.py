"""An abstention reaches the review queue with what the judge saw (issue #28, item 3): the
reason and each claim with its verdict, read back by the queue's ``judge_note``."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime
from functools import partial

import orjson
import pytest

from attesta_classifier.adapters.judges import OfflineJudge
from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.domain.commands import AddManualFact, CreateBrand, JudgeDuePairs, RecordRuns
from attesta_classifier.domain.review import judge_note
from attesta_classifier.service_layer import brands as brand_svc
from attesta_classifier.service_layer import ground_truth as gt_svc
from attesta_classifier.service_layer.judge_worker import Backoff, judge_due
from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
from attesta_contracts.runs import RunRecorded

pytestmark = pytest.mark.integration

# Two claims the facts neither support nor contradict: the exact checks cannot decide them.
UNDECIDABLE = "Kestrel Labs has sold diagnostic kits in 40 countries since 1990."


async def test_abstention_stores_each_claim_for_the_reviewer(pool, heuristic, workspace):
    await brand_svc.create_brand(CreateBrand(workspace, "Kestrel Labs", "kestrel",
                                             domains=("kestrel.example",)), ClassifierUnitOfWork(pool))
    await gt_svc.add_manual_fact(AddManualFact(workspace, "kestrel", "manual", "Kestrel Labs makes test kits.",
                                               "https://kestrel.example/", "test"), ClassifierUnitOfWork(pool))
    at = datetime.now(UTC)
    run_id = f"rj-{uuid.uuid4().hex}"
    payload = RunRecorded(run_id=run_id, workspace_id=workspace, engine="e", model="m", prompt="kits?",
                          answer=UNDECIDABLE, answer_sha256=hashlib.sha256(UNDECIDABLE.encode()).hexdigest(),
                          requested_at=at, answered_at=at)
    counts, _ = await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), payload, run_id),), "classifier", "live"),
                                  ClassifierUnitOfWork(pool), heuristic)
    assert counts["pending"] == 1

    counts = await judge_due(JudgeDuePairs(10), partial(ClassifierUnitOfWork, pool), OfflineJudge(),
                             heuristic, judge_backoff=Backoff(0.01, 0.02))
    assert counts["deferred"] == 1, counts
    async with pool.acquire() as conn:
        row = await conn.fetchrow("SELECT attempts, last_error, judgment FROM pending_judgments "
                                  "WHERE run_id = $1", run_id)
    stored = orjson.loads(row["judgment"])
    assert stored["reason"] and stored["judge_model"]
    assert stored["claims"], stored
    assert all(c["claim"] and c["verdict"] and c["reason"] for c in stored["claims"])
    note = judge_note(None, row["attempts"], row["last_error"], stored)
    assert note.state == "abstained"
    assert note.reason == stored["reason"]
    assert [c.claim for c in note.claims] == [c["claim"] for c in stored["claims"]]
