"""One contract for the classifier's repositories and unit of work, run against the in-memory
fakes (``adapters/memory.py``) and against PostgreSQL (a migrated database of this module), so
the fakes the service-layer unit tests use behave like production."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from attesta_classifier.adapters.memory import InMemoryClassifierUnitOfWork
from attesta_classifier.domain.model import Brand, Fact, Run
from attesta_classifier.service_layer.unit_of_work import HistoryRow, PendingRow, RunQuery
from attesta_contracts.runs import PromptContext, RunSource
from attesta_platform.outbox import OutboxRow


@pytest.fixture(params=[pytest.param("memory", marks=pytest.mark.unit),
                        pytest.param("postgres", marks=pytest.mark.integration)])
def new_uow(request):
    """A factory of units of work on one store (fresh for the fakes; ids keep tests apart on
    PostgreSQL)."""
    if request.param == "memory":
        state = InMemoryClassifierUnitOfWork().state
        return lambda: InMemoryClassifierUnitOfWork(state)
    from attesta_classifier.adapters.postgres import ClassifierUnitOfWork

    pool = request.getfixturevalue("module_pool")
    return lambda: ClassifierUnitOfWork(pool)


def ids() -> tuple[str, str]:
    return f"ws-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"


def run(ws: str, run_id: str, brand_ids: tuple[str, ...] = ("acme",), *, engine: str = "e",
        prompt: str = "p?", at: datetime | None = None) -> Run:
    at = at or datetime.now(UTC)
    return Run(run_id, ws, engine, "m", prompt, "Acme is fine.", "0" * 64, brand_ids, at, at)


def decision(ws: str, run_id: str, brand_id: str = "acme", cls: str = "STRONG",
             at: datetime | None = None) -> HistoryRow:
    return HistoryRow(uuid.uuid4(), run_id, brand_id, ws, cls, "deterministic", None, "a" * 64,
                      ["f1"], "because", "live", None, "h-1", None, "0" * 64, None,
                      at or datetime.now(UTC))


async def test_commit_keeps_and_leaving_without_commit_rolls_back(new_uow):
    ws, _ = ids()
    async with new_uow() as uow:
        await uow.brands.add(Brand("kept", ws, "Kept"))
        await uow.commit()
    async with new_uow() as uow:
        await uow.brands.add(Brand("dropped", ws, "Dropped"))
    with pytest.raises(RuntimeError):
        async with new_uow() as uow:
            await uow.brands.add(Brand("failed", ws, "Failed"))
            raise RuntimeError("the service layer failed")
    async with new_uow() as uow:
        assert [b.brand_id for b in await uow.brands.list(ws)] == ["kept"]


async def test_brands_add_get_update_and_list(new_uow):
    ws, _ = ids()
    async with new_uow() as uow:
        added = await uow.brands.add(Brand("acme", ws, "Acme", aliases=("ACME",),
                                           sources=("https://acme.example/",)))
        assert added is not None and added.created_at is not None
        assert await uow.brands.add(Brand("acme", ws, "Other")) is None
        await uow.brands.add(Brand("rival", ws, "Rival"))
        updated = await uow.brands.update(ws, "acme", {"competitors": ["rival"], "name": "Acme Co"})
        assert (updated.name, updated.competitors, updated.aliases) == ("Acme Co", ("rival",), ("ACME",))
        assert await uow.brands.get(ws, "acme") == updated
        assert await uow.brands.get("another-ws", "acme") is None
        assert await uow.brands.existing(ws, ["acme", "nobody"]) == {"acme"}
        plain = await uow.brands.of_workspaces([ws])
        assert set(plain) == {(ws, "acme"), (ws, "rival")}
        assert type(plain[(ws, "acme")]) is Brand and plain[(ws, "acme")].name == "Acme Co"
        await uow.commit()


async def test_refresh_lock_is_held_until_the_unit_of_work_ends(new_uow):
    ws, _ = ids()
    async with new_uow() as first:
        assert await first.brands.lock_refresh(ws, "acme")
        assert await first.brands.lock_refresh(ws, "acme")  # its holder may ask again
        async with new_uow() as second:
            assert not await second.brands.lock_refresh(ws, "acme")
            assert await second.brands.lock_refresh(ws, "other")
    async with new_uow() as third:
        assert await third.brands.lock_refresh(ws, "acme")


async def test_facts_activate_supersede_and_revive(new_uow):
    ws, _ = ids()
    now = datetime.now(UTC)
    f1 = Fact(f"f1-{ws}", "acme", "manual", "Acme makes anvils.", "https://a/", now, "t", "1" * 64)
    f2 = Fact(f"f2-{ws}", "acme", "paragraph", "Acme is old.", "https://a/", now, "t", "2" * 64)
    async with new_uow() as uow:
        with pytest.raises(asyncpg.ForeignKeyViolationError):  # facts belong to a brand
            async with new_uow() as other:
                await other.facts.activate(ws, [f1], "r0")
        await uow.brands.add(Brand("acme", ws, "Acme"))
        await uow.facts.activate(ws, [f1, f2], "r1")
        assert [f.fact_id for f in await uow.facts.active(ws, "acme")] == sorted([f1.fact_id, f2.fact_id])
        await uow.facts.supersede([f2.fact_id], now, "r2")
        gone = await uow.facts.get(f2.fact_id)
        assert gone is not None and not gone.active and gone.superseded_at == now
        assert [f.fact_id for f in await uow.facts.superseded(ws, "acme")] == [f2.fact_id]
        assert {k: [f.fact_id for f in v] for k, v in (await uow.facts.active_of([ws])).items()} \
            == {(ws, "acme"): [f1.fact_id]}
        assert await uow.facts.active_of([ws], ["other"]) == {}
        await uow.facts.activate(ws, [f2], "r3")
        back = await uow.facts.get(f2.fact_id)
        assert back is not None and back.active and back.superseded_at is None
        assert back.workspace_id == ws and back.text == "Acme is old." and back.created_at
        assert await uow.facts.superseded(ws, "acme") == []
        await uow.commit()


async def test_runs_are_stored_once_and_read_by_workspace(new_uow):
    ws, rid = ids()
    async with new_uow() as uow:
        await uow.runs.add_new([run(ws, rid)])
        await uow.runs.add([run(ws, rid, ("other",))])  # a second copy changes nothing
        await uow.commit()
    async with new_uow() as uow:
        stored = await uow.runs.get(ws, rid)
        assert stored is not None and stored.brand_ids == ("acme",) and stored.recorded_at
        assert await uow.runs.get("another-ws", rid) is None
        assert await uow.runs.owners([rid, "missing"]) == {rid: ws}
        assert set(await uow.runs.get_many([rid])) == {rid}
    with pytest.raises(asyncpg.UniqueViolationError):
        async with new_uow() as uow:
            await uow.runs.add_new([run(ws, rid)])


async def test_run_pages_filter_and_continue_newest_first(new_uow):
    ws, _ = ids()
    rids = [f"p{i}-{ws}" for i in range(5)]
    for i, rid in enumerate(rids):  # one transaction each: recorded_at grows
        async with new_uow() as uow:
            await uow.runs.add([run(ws, rid, engine="x" if i % 2 else "y")])
            await uow.commit()
    async with new_uow() as uow:
        await uow.decisions.append([decision(ws, rids[1], cls="ECHO")])
        await uow.commit()
    async with new_uow() as uow:
        page = await uow.runs.page(ws, RunQuery(), 3)
        assert [r.run_id for r in page] == rids[::-1][:3]
        last = page[-1]
        rest = await uow.runs.page(ws, RunQuery(before=(last.recorded_at, last.run_id)), 10)
        assert [r.run_id for r in rest] == rids[::-1][3:]
        assert [r.run_id for r in await uow.runs.page(ws, RunQuery(engine="x"), 10)] == [rids[3], rids[1]]
        assert [r.run_id for r in await uow.runs.page(ws, RunQuery(citation_class="ECHO"), 10)] == [rids[1]]
        assert [r.run_id for r in await uow.runs.page(ws, RunQuery(decided_by="deterministic"), 10)] \
            == [rids[1]]
        assert await uow.runs.page(ws, RunQuery(decided_by="judge"), 10) == []
        assert await uow.runs.page(ws, RunQuery(status="refused"), 10) == []
        assert [r.run_id for r in await uow.runs.of_brand(ws, "acme", "", 2)] == sorted(rids)[:2]


async def test_decisions_move_the_current_state_and_settle_pending(new_uow):
    ws, rid = ids()
    now = datetime.now(UTC)
    async with new_uow() as uow:
        await uow.runs.add([run(ws, rid, ("acme", "rival", "third"))])
        await uow.decisions.park([PendingRow(rid, "acme", ws, "live", None, None),
                                  PendingRow(rid, "rival", ws, "live", None, None)], now)
        states = {s.brand_id: s.status for s in await uow.decisions.states([rid])}
        assert states == {"acme": "pending", "rival": "pending"}
        first = decision(ws, rid, "acme", "STRONG", now)
        await uow.decisions.append([first])
        await uow.decisions.refuse([(rid, "rival", ws, "no ground truth")], now)
        token = uuid.uuid4()
        assert [c for c in await uow.decisions.claim_due(token, 1000, 60) if c.run_id == rid] == []
        await uow.decisions.park([PendingRow(rid, "acme", ws, "manual", "why", "me")], now)
        second = decision(ws, rid, "acme", "ECHO", now + timedelta(seconds=1))
        await uow.commit()
    async with new_uow() as uow:
        acme, rival = await uow.decisions.states([rid])
        assert (acme.status, acme.citation_class, acme.classification_id) == (
            "classified", "STRONG", first.classification_id)  # a park keeps the class meanwhile
        assert (rival.status, rival.reason) == ("refused", "no ground truth")
        await uow.decisions.append([second])
        assert [h.citation_class for h in await uow.decisions.history(rid, None)] == ["STRONG", "ECHO"]
        assert [h.classification_id for h in await uow.decisions.history(rid, now)] == [first.classification_id]
        assert (await uow.decisions.states([rid]))[0].citation_class == "ECHO"
        token = uuid.uuid4()
        assert [c for c in await uow.decisions.claim_due(token, 1000, 60) if c.run_id == rid] == []


async def test_parked_pairs_are_claimed_deferred_and_released_by_their_token(new_uow):
    ws, rid = ids()
    async with new_uow() as uow:
        await uow.runs.add([run(ws, rid, ("acme", "rival"))])
        await uow.decisions.park([PendingRow(rid, "acme", ws, "live", None, None),
                                  PendingRow(rid, "rival", ws, "backfill", "r", "a")],
                                 datetime.now(UTC))
        await uow.commit()
    token = uuid.uuid4()
    async with new_uow() as uow:
        mine = sorted((c for c in await uow.decisions.claim_due(token, 1000, 60) if c.run_id == rid),
                      key=lambda c: c.brand_id)
        assert [(c.brand_id, c.trigger, c.attempts) for c in mine] == [("acme", "live", 1),
                                                                      ("rival", "backfill", 1)]
        assert [c for c in await uow.decisions.claim_due(uuid.uuid4(), 1000, 60) if c.run_id == rid] == []
        assert not await uow.decisions.release_claim(rid, "acme", uuid.uuid4())
        assert await uow.decisions.release_claim(rid, "acme", token)
        await uow.decisions.defer(rid, "rival", token, 0.0, "judge down", "the judge abstained")
        await uow.commit()
    async with new_uow() as uow:
        again = [c for c in await uow.decisions.claim_due(uuid.uuid4(), 1000, 60) if c.run_id == rid]
        assert [(c.brand_id, c.attempts) for c in again] == [("rival", 2)]
        rival = [s for s in await uow.decisions.states([rid]) if s.brand_id == "rival"][0]
        assert (rival.status, rival.reason) == ("pending", "the judge abstained")


async def test_tallies_count_pairs_per_period_state_and_prompt(new_uow):
    ws, rid = ids()
    monday = datetime(2026, 11, 30, 10, tzinfo=UTC)
    cites = (RunSource(url="https://acme.example/a", domain="acme.example", host="acme.example",
                       position=0),
             RunSource(url="https://x.example.org/", domain="example.org", position=1))
    async with new_uow() as uow:
        await uow.runs.add([replace(run(ws, rid, ("acme", "rival"), at=monday + timedelta(days=2)),
                                    sources=cites, prompt_context=PromptContext(
                                        prompt_id="p1", topic="anvils", funnel="buy")),
                            run(ws, rid + "b", ("acme",), at=monday + timedelta(days=9))])
        await uow.decisions.append([decision(ws, rid, "acme", "STRONG"),
                                    decision(ws, rid + "b", "acme", "STRONG")])
        await uow.decisions.refuse([(rid, "rival", ws, "none")], monday)
        await uow.commit()
    async with new_uow() as uow:
        week = {(t.brand_id, t.bucket, t.status, t.citation_class, t.n)
                for t in await uow.decisions.tallies(ws, "week", None, None, None)}
        start = monday.replace(hour=0)
        assert week == {("acme", start, "classified", "STRONG", 1),
                        ("rival", start, "refused", None, 1),
                        ("acme", start + timedelta(days=7), "classified", "STRONG", 1)}
        tagged = [t for t in await uow.decisions.tallies(ws, "week", None, None, None)
                  if t.brand_id == "rival"]
        assert [(t.topic, t.persona, t.funnel, sorted(t.cited)) for t in tagged] == [
            ("anvils", None, "buy", ["acme.example acme.example", "example.org example.org"])]
        month = await uow.decisions.tallies(ws, "month", "e", monday, monday + timedelta(days=5))
        assert {(t.brand_id, t.bucket, t.n) for t in month} == {
            ("acme", datetime(2026, 12, 1, tzinfo=UTC), 1), ("rival", datetime(2026, 12, 1, tzinfo=UTC), 1)}
        assert await uow.decisions.tallies(ws, "day", "other-engine", None, None) == []


async def test_outbox_and_inbox_are_part_of_the_unit_of_work(new_uow):
    event = uuid.uuid4()
    row = OutboxRow("t.v1", "k", event, b"{}")
    async with new_uow() as uow:
        assert await uow.inbox.claim("c", [event]) == {event}
        await uow.outbox.add([row])
        await uow.outbox.add([row])  # idempotent per event id
    async with new_uow() as uow:  # rolled back: the claim is free again
        assert await uow.inbox.claim("c", [event]) == {event}
        assert await uow.inbox.claim("c", [event]) == set()
        assert await uow.inbox.claim("other", [event]) == {event}
        await uow.outbox.add_new([row])
        await uow.commit()
    with pytest.raises(asyncpg.UniqueViolationError):
        async with new_uow() as uow:
            await uow.outbox.add_new([row])
