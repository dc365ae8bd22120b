"""Issue #18 against the real PostgreSQL: decisions recorded under the old offline rules are
re-judged by a reverification under the new ones. The history gains rows (never rewritten) that
carry the new rules and heuristic versions and say why; a pair the new rules cannot decide stays
with its class and a pending judgment that holds the abstention's reason."""

from __future__ import annotations

import dataclasses
from functools import partial
import hashlib
import uuid
from datetime import UTC, datetime

import pytest

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.adapters.judges import OFFLINE_MODEL_NAME, OfflineJudge
from attesta_classifier.domain.judging import OFFLINE_RULES_VERSION
from attesta_classifier.domain.model import Decision
from attesta_classifier.service_layer import brands as brand_svc
from attesta_classifier.service_layer import ground_truth as gt_svc
from attesta_classifier.service_layer import runs as runs_svc
from attesta_classifier.service_layer.judge_worker import Backoff, judge_due
from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
from attesta_classifier.domain.commands import AddManualFact, CreateBrand, JudgeDuePairs, RecordRuns, Reverify
from attesta_contracts.classification import CitationClass
from attesta_contracts.runs import RunRecorded

pytestmark = pytest.mark.integration

OLD_RULES = "offline-rules-2026.12.4"
FACTS = (
    "Jatobá Calçados — descrição: Fabricante de sandálias e tênis de couro.",
    "Jatobá Calçados — sede: Franca, SP, Brasil",
    "Jatobá Calçados — número de funcionários: 640",
    "A Jatobá exporta para o Chile e o Peru desde 2018.",
)
ANSWERS = {  # answer -> what the new rules say
    "Não tenho informações sobre a Jatobá Calçados.": "ECHO",
    "A Jatobá Calçados tem seiscentos e quarenta funcionários.": "DESCRIPTIVE",
    "A Jatobá Calçados exporta para o Chile e o México.": "CONFABULATED",
    "A Jatobá Calçados ganhou um prêmio de design.": None,  # nothing to check it against
}


@pytest.fixture(scope="module")
def pool(module_pool):
    """``judge_due`` claims every due pair in its database: on the session's shared one, other
    tests' parked pairs were counted in these tallies."""
    return module_pool


async def _jatoba_with_facts(pool, workspace: str) -> None:
    """The brand with FACTS as its manual ground truth."""
    await brand_svc.create_brand(CreateBrand(
        workspace, "Jatobá Calçados", "jatoba", aliases=("Jatobá",), domains=("jatoba.com.br",)),
        ClassifierUnitOfWork(pool))
    for text in FACTS:
        await gt_svc.add_manual_fact(AddManualFact(workspace, "jatoba", "manual", text,
                                                   "https://jatoba.com.br/sobre", "test"),
                                     ClassifierUnitOfWork(pool))


async def _record_run(pool, heuristic, workspace: str, prompt: str, answer: str) -> tuple[str, dict]:
    """A live run of ``answer`` recorded and classified: its id and the counts recorded."""
    at = datetime.now(UTC)
    run_id = f"rv-{uuid.uuid4().hex}"
    payload = RunRecorded(run_id=run_id, workspace_id=workspace, engine="e", model="m", prompt=prompt,
                          answer=answer, answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                          requested_at=at, answered_at=at)
    counts, _ = await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), payload, run_id),), "classifier", "live"),
                                  ClassifierUnitOfWork(pool), heuristic)
    return run_id, counts


class OldRules:
    """Stands in for the decisions the offline rules 2026.12.4 recorded (issue #18: every one of
    these was CONFABULATED); the history rows it leaves are what a real deployment has."""

    model_name = OFFLINE_MODEL_NAME
    prompt_version = OLD_RULES

    async def judge(self, *, run, brand, facts) -> Decision:
        return Decision(CitationClass.CONFABULATED, "CONFABULATED: no fact mentions the claim",
                        "judge", (facts[0].fact_id,), OFFLINE_MODEL_NAME, "", OLD_RULES)


async def test_reverify_appends_new_rules_decisions_and_keeps_the_old(pool, heuristic, workspace):
    await _jatoba_with_facts(pool, workspace)
    ids: dict[str, str] = {}
    for answer in ANSWERS:
        run_id, counts = await _record_run(pool, heuristic, workspace,
                                           "O que você sabe da Jatobá Calçados?", answer)
        assert counts["pending"] == 1, answer
        ids[answer] = run_id
    old = await judge_due(JudgeDuePairs(100), partial(ClassifierUnitOfWork, pool), OldRules(),
                          dataclasses.replace(heuristic, version="heuristic-2026.12.2"))
    assert old["judged"] == len(ANSWERS)

    result = await runs_svc.reverify_brand(Reverify(workspace, "jatoba", actor="t",
                                                    reason="offline rules 2026.12.5"),
                                           ClassifierUnitOfWork(pool), heuristic)
    assert result["runs"] == len(ANSWERS) and result["pending"] == len(ANSWERS)
    new = await judge_due(JudgeDuePairs(100), partial(ClassifierUnitOfWork, pool), OfflineJudge(), heuristic,
                          judge_backoff=Backoff(0.01, 600.0))
    assert new == {"judged": 3, "refused": 0, "deferred": 1}

    async with pool.acquire() as conn:
        for answer, expected in ANSWERS.items():
            hist = await conn.fetch(
                "SELECT citation_class, prompt_version, heuristic_version, trigger, reason, fact_ids "
                "FROM classification_history WHERE run_id = $1 ORDER BY classified_at", ids[answer])
            # the old decision is still there, untouched
            assert (hist[0]["citation_class"], hist[0]["prompt_version"], hist[0]["trigger"]) == \
                ("CONFABULATED", OLD_RULES, "live")
            status = await conn.fetchrow("SELECT status, citation_class FROM run_brand_status "
                                         "WHERE run_id = $1", ids[answer])
            if expected is None:
                assert len(hist) == 1  # no new class: the old one stays current ...
                parked = await conn.fetchrow("SELECT last_error, next_attempt_at - now() AS wait "
                                             "FROM pending_judgments WHERE run_id = $1", ids[answer])
                # ... and the pending judgment says why the new rules did not decide
                assert "JudgeAbstained" in parked["last_error"] and "no verdict" in parked["last_error"]
                assert parked["wait"].total_seconds() > 200  # the longest backoff, not the first
                continue
            assert len(hist) == 2, answer
            row = hist[1]
            assert row["citation_class"] == expected, row["reason"]
            assert row["prompt_version"] == OFFLINE_RULES_VERSION and row["trigger"] == "reverification"
            assert row["heuristic_version"] == heuristic.version and row["reason"].startswith(expected)
            assert status["citation_class"] == expected
            if expected != "ECHO":
                assert row["fact_ids"], row["reason"]


async def test_a_new_pair_the_offline_judge_cannot_decide_shows_why(pool, heuristic, workspace):
    await _jatoba_with_facts(pool, workspace)
    run_id, _ = await _record_run(pool, heuristic, workspace, "Jatobá?",
                                  "A Jatobá Calçados ganhou um prêmio de design.")
    counts = await judge_due(JudgeDuePairs(10), partial(ClassifierUnitOfWork, pool), OfflineJudge(),
                             heuristic, judge_backoff=Backoff(0.01, 600.0))
    assert counts["deferred"] == 1
    async with pool.acquire() as conn:
        status = await conn.fetchrow("SELECT status, reason, citation_class FROM run_brand_status "
                                     "WHERE run_id = $1", run_id)
        assert await conn.fetchval("SELECT count(*) FROM classification_history WHERE run_id = $1", run_id) == 0
    assert status["status"] == "pending" and status["citation_class"] is None
    assert status["reason"].startswith("offline judge abstained") and "prêmio" in status["reason"]
