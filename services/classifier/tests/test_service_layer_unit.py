"""The classifier's service layer on the in-memory unit of work (no infrastructure): what each
use case writes, stages and refuses. The same flows against PostgreSQL are in test_api.py and
test_judge_worker.py; tests/test_stores.py keeps the fakes honest."""

from __future__ import annotations

from functools import partial
import hashlib
import uuid
from datetime import UTC, datetime

import orjson
import pytest

from attesta_classifier.adapters.fetcher import FetchedDocument, FetchFailed
from attesta_classifier.adapters.memory import ClassifierState, InMemoryClassifierUnitOfWork
from attesta_classifier.bootstrap import build_heuristic
from attesta_classifier.domain.model import Decision
from attesta_classifier.service_layer import brands, ground_truth, runs
from attesta_classifier.service_layer.errors import Conflict, Invalid, NotFound
from attesta_classifier.service_layer.judge_worker import Backoff, judge_due
from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
from attesta_classifier.domain.commands import (
    AddManualFact, CreateBrand, GetBrand, GetGroundTruth, GetHistory, JudgeDuePairs, Reclassify,
    RecordRuns, RefreshGroundTruth, UpdateBrand)
from attesta_contracts.runs import RunRecorded

pytestmark = pytest.mark.unit
WS = "ws"
HEURISTIC = build_heuristic()


@pytest.fixture
def state() -> ClassifierState:
    return ClassifierState()


def uow(state: ClassifierState) -> InMemoryClassifierUnitOfWork:
    return InMemoryClassifierUnitOfWork(state)


def recorded(run_id: str, answer: str, brand_ids: list[str], workspace: str = WS) -> RunRecorded:
    at = datetime.now(UTC)
    return RunRecorded(run_id=run_id, workspace_id=workspace, engine="e", model="m", prompt="p?",
                       answer=answer, answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
                       brand_ids=brand_ids, requested_at=at, answered_at=at)


async def acme(state: ClassifierState) -> None:
    await brands.create_brand(CreateBrand(
        WS, "Acme Anvils", "acme", domains=("acme.example",),
        sources=("https://acme.example/about",)), uow(state))
    await ground_truth.add_manual_fact(AddManualFact(
        WS, "acme", "manual", "Acme Anvils makes anvils.", "https://acme.example/about", "t"),
        uow(state))


def staged(state: ClassifierState, topic: str) -> list[dict]:
    return [orjson.loads(r.value) for r in state.outbox if r.topic == topic]


async def test_brands_are_created_once_and_competitors_must_exist(state):
    await acme(state)
    with pytest.raises(Conflict):
        await brands.create_brand(CreateBrand(WS, "Again", "acme"), uow(state))
    with pytest.raises(Invalid, match="unknown: nobody"):
        await brands.update_brand(UpdateBrand(WS, "acme", competitors=("nobody",)), uow(state))
    with pytest.raises(NotFound):
        await brands.get_brand(GetBrand("other-ws", "acme"), uow(state))
    got = await brands.update_brand(UpdateBrand(WS, "acme", aliases=("ACME", "ACME")), uow(state))
    assert got.aliases == ("ACME",) and got.name == "Acme Anvils"


async def test_a_run_is_classified_once_with_its_event_staged(state):
    await acme(state)
    event_id = uuid.uuid4()
    item = IncomingRun(event_id, recorded("r1", "Acme Anvils (https://acme.example/anvils) makes "
                                                "anvils.", ["acme"]), "corr")
    counts, rejected = await record_runs(RecordRuns((item,), "c", "live"), uow(state), HEURISTIC)
    assert rejected == [] and counts["runs"] == 1 and counts["recorded"] == 1
    [event] = staged(state, "classification.recorded.v1")
    assert (event["payload"]["run_id"], event["payload"]["citation_class"]) == ("r1", "STRONG")
    assert event["causation_id"] == str(event_id)
    again, _ = await record_runs(RecordRuns((item,), "c", "live"), uow(state), HEURISTIC)
    assert again["runs"] == 0 and len(state.history) == 1  # the redelivery changed nothing


async def test_without_ground_truth_the_pair_is_refused_and_bad_input_rejected(state):
    await brands.create_brand(CreateBrand(WS, "Bare", "bare"), uow(state))
    ok = IncomingRun(uuid.uuid4(), recorded("r2", "Bare is fine.", ["bare"]), "c")
    forged = recorded("r3", "x", ["bare"]).model_copy(update={"answer_sha256": "0" * 64})
    counts, rejected = await record_runs(RecordRuns((ok, IncomingRun(uuid.uuid4(), forged, "c")), "c", "live"),
                                         uow(state), HEURISTIC)
    assert counts["refused"] == 1 and [r.item.payload.run_id for r in rejected] == ["r3"]
    [refusal] = staged(state, "classification.refused.v1")
    assert "no active ground truth" in refusal["payload"]["reason"]
    assert state.states[("r2", "bare")].status == "refused"


async def test_a_failed_write_leaves_nothing_behind(state, monkeypatch):
    await acme(state)
    before = (len(state.outbox), dict(state.runs), set(state.inbox))

    async def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    unit = uow(state)
    monkeypatch.setattr(unit.decisions, "append", broken)
    with pytest.raises(RuntimeError):
        await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), recorded(
            "r4", "Acme Anvils (https://acme.example/) makes anvils.", ["acme"]), "c"),), "c", "live"),
            unit, HEURISTIC)
    assert (len(state.outbox), dict(state.runs), set(state.inbox)) == before


class Pages:
    """A fetcher serving fixed documents (an unknown URL fails like an unreachable site)."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.pages = pages

    async def fetch(self, url: str) -> FetchedDocument:
        if url not in self.pages:
            raise FetchFailed(f"{url}: connection refused")
        return FetchedDocument(url, url, 200, "text/html", self.pages[url].encode())


async def test_refresh_adds_facts_once_and_keeps_facts_of_failed_sources(state):
    await brands.create_brand(CreateBrand(
        WS, "Acme", "acme", sources=("https://acme.example/a", "https://acme.example/b")), uow(state))
    page = "<html><body><h1>Acme</h1><p>Acme Anvils makes heavy anvils since 1901.</p></body></html>"
    fetcher = Pages({"https://acme.example/a": page})
    first = await ground_truth.refresh(RefreshGroundTruth(WS, "acme"), uow(state), fetcher)
    assert first.changed and first.added_fact_ids and [s.ok for s in first.sources] == [True, False]
    assert len(staged(state, "groundtruth.refreshed.v1")) == 1
    second = await ground_truth.refresh(RefreshGroundTruth(WS, "acme"), uow(state), fetcher)
    assert not second.changed and second.ground_truth_hash == first.ground_truth_hash
    assert len(staged(state, "groundtruth.refreshed.v1")) == 1
    assert len(staged(state, "groundtruth.source-fetched.v1")) == 1  # same bytes, same event
    with pytest.raises(Exception, match="no source could be fetched"):
        await ground_truth.refresh(RefreshGroundTruth(WS, "acme"), uow(state), Pages({}))
    gt_hash, facts, _ = await ground_truth.get_ground_truth(GetGroundTruth(WS, "acme"), uow(state))
    assert gt_hash == first.ground_truth_hash and len(facts) == len(first.active_fact_ids)


class Judge:
    model_name, prompt_version = "fake-judge", "p1"

    def __init__(self) -> None:
        self.down = True

    async def judge(self, *, run, brand, facts) -> Decision:
        if self.down:
            raise ConnectionError("judge down")
        return Decision("DESCRIPTIVE", "consistent", "judge", (facts[0].fact_id,))


async def test_ambiguous_pairs_wait_for_the_judge_and_never_guess(state):
    await acme(state)
    item = IncomingRun(uuid.uuid4(), recorded("r5", "Acme Anvils sells tools, I think.", ["acme"]), "c")
    counts, _ = await record_runs(RecordRuns((item,), "c", "live"), uow(state), HEURISTIC)
    assert counts["pending"] == 1 and state.states[("r5", "acme")].status == "pending"
    judge = Judge()
    assert await judge_due(JudgeDuePairs(50), partial(uow, state), judge, HEURISTIC,
                           judge_backoff=Backoff(0.0, 0.0)) \
        == {"judged": 0, "refused": 0, "deferred": 1}
    assert state.states[("r5", "acme")].status == "pending" and not state.history
    judge.down = False
    assert (await judge_due(JudgeDuePairs(50), partial(uow, state), judge, HEURISTIC))["judged"] == 1
    assert state.states[("r5", "acme")].citation_class == "DESCRIPTIVE" and not state.pending
    states = await runs.reclassify(Reclassify(WS, "r5", reason="check", actor="me"),
                                   uow(state), HEURISTIC, judge)
    assert [(s.brand_id, s.citation_class) for s in states] == [("acme", "DESCRIPTIVE")]
    history, latest = await runs.history(GetHistory(WS, "r5", None), uow(state))
    assert [h.trigger for h in history] == ["live", "manual"] and latest[0].actor == "me"
