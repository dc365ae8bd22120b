"""Ground truth: refresh from a brand's sources, manual facts, the active set and its hash.

Refresh rules:
- every source is fetched through the SSRF-safe fetcher; each fetched document is recorded as
  evidence (``groundtruth.source-fetched.v1`` through the outbox, event id derived from brand,
  URL and the document's SHA-256, so the same bytes fetched again stage nothing new);
- facts extracted from a fetched document (``domain.extraction``) that are not active yet are
  inserted active (or re-activated); active facts of a *successfully fetched* source that the
  new document no longer yields are superseded (``active = false``, ``superseded_at``), as are
  facts of sources no longer configured; a source that failed to fetch keeps its facts (an
  outage must not erase ground truth); manual facts are never touched; nothing is deleted;
- a refresh that changes nothing writes nothing and publishes no ``groundtruth.refreshed.v1``;
- when every source fails, the refresh fails (``UpstreamFailed``; ``SourcesRefused`` when the
  SSRF guard refused them all)
  and nothing is written;
- the whole refresh has ONE deadline (``ATTESTA_REFRESH_DEADLINE_S``, shorter than the gateway's
  upstream timeout so the caller always gets this answer, not a gateway 504): sources still
  being fetched when the fetch budget runs out are cancelled and reported as not fetched, and
  the write that follows is bounded by the rest of the deadline. Nothing keeps working for a
  caller that has been answered;
- one refresh per brand at a time (a lock its unit of work holds for the refresh's duration, a
  PostgreSQL advisory lock, so it holds across classifier instances): a second request meanwhile
  gets 409 ``refresh_in_progress`` with ``Retry-After``, which the gateway does not store as the
  answer of an Idempotency-Key. The unit of work's transaction stays open while the sources are
  fetched (bounded by the deadline) so that the lock ends with it, whatever ends the task.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol
from datetime import datetime
from urllib.parse import urlsplit

from pydantic import BaseModel

from attesta_classifier.domain.commands import AddManualFact, GetGroundTruth, RefreshGroundTruth
from attesta_classifier.domain.extraction import decode_body, extract_facts, fact_id
from attesta_classifier.domain.model import Fact, ground_truth_hash
from attesta_classifier.service_layer.brands import require_brand
from attesta_classifier.service_layer.errors import (
    Conflict,
    RefreshInProgress,
    RefreshTimedOut,
    SourcesRefused,
    UpstreamFailed,
)
from attesta_classifier.service_layer.pipeline import PRODUCER
from attesta_classifier.service_layer.unit_of_work import StoredBrand, StoredFact, UnitOfWork
from attesta_contracts import derived_id, utc_now
from attesta_contracts.groundtruth import GroundTruthRefreshed, GroundTruthSourceFetched
from attesta_contracts.topics import GROUNDTRUTH_REFRESHED, GROUNDTRUTH_SOURCE_FETCHED
from attesta_platform import outbox
from attesta_platform.outbound import OutboundRefused

MANUAL_TYPES = frozenset({"manual"})


@dataclass(frozen=True)
class FetchedDocument:
    url: str  # the URL asked for
    final_url: str  # after redirects
    status: int
    content_type: str
    body: bytes


class FetchFailed(Exception):
    """The target could not be fetched (DNS, connection, timeout, HTTP error status)."""


class Fetcher(Protocol):
    """What a refresh fetches with (``adapters.fetcher.SafeFetcher`` in production): a
    document, ``FetchFailed``, or the outbound policy's refusal (``OutboundRefused``)."""

    async def fetch(self, url: str) -> FetchedDocument: ...


@dataclass
class SourceOutcome:
    url: str
    ok: bool
    http_status: int | None = None
    sha256: str | None = None
    bytes: int | None = None
    facts_extracted: int = 0
    error: str | None = None
    document: FetchedDocument | None = None
    refused: bool = False  # by the SSRF guard (a configuration problem, not an outage)


@dataclass
class RefreshOutcome:
    refresh_id: str
    brand_id: str
    changed: bool
    ground_truth_hash: str
    active_fact_ids: list[str]
    added_fact_ids: list[str]
    superseded_fact_ids: list[str]
    sources: list[SourceOutcome]


class GroundTruthView(NamedTuple):
    ground_truth_hash: str
    facts: list[StoredFact]
    superseded: list[StoredFact] | None  # when asked for


async def get_ground_truth(query: GetGroundTruth, uow: UnitOfWork) -> GroundTruthView:
    ws, brand_id = query.workspace_id, query.brand_id
    async with uow.read():
        await require_brand(uow, ws, brand_id)
        facts = await uow.facts.active(ws, brand_id)
        superseded = await uow.facts.superseded(ws, brand_id) if query.include_superseded else None
    return GroundTruthView(ground_truth_hash(facts), facts, superseded)


async def _fetch_all(fetcher: Fetcher, urls: Sequence[str], budget_s: float,
                     concurrency: int = 8) -> list[SourceOutcome]:
    """Fetch every URL, ``concurrency`` at a time, all within ``budget_s``: what is still
    running then is cancelled (its connection closed) and reported as not fetched."""
    gate = asyncio.Semaphore(concurrency)

    async def one(url: str) -> SourceOutcome:
        async with gate:
            try:
                doc = await fetcher.fetch(url)
            except OutboundRefused as exc:
                return SourceOutcome(url, False, error=f"FetchRefused: {exc}", refused=True)
            except FetchFailed as exc:
                return SourceOutcome(url, False, error=f"FetchFailed: {exc}")
        return SourceOutcome(url, True, doc.status, hashlib.sha256(doc.body).hexdigest(),
                             len(doc.body), document=doc)

    tasks = [asyncio.create_task(one(u)) for u in urls]
    try:
        _, pending = await asyncio.wait(tasks, timeout=max(0.0, budget_s))
    finally:
        for t in tasks:
            t.cancel()  # no-op for finished ones; also when this request itself is cancelled
        await asyncio.gather(*tasks, return_exceptions=True)
    return [t.result() if t not in pending else
            SourceOutcome(u, False, error=f"FetchFailed: not fetched within the refresh "
                                          f"deadline ({budget_s:.1f} s for all sources)")
            for u, t in zip(urls, tasks, strict=True)]


def _attribution(url: str) -> str:
    return f"{urlsplit(url).hostname or url} (brand website), fetched by the Attesta ground-truth refresh"


def _event(topic: str, key: str, payload: BaseModel, event_id: uuid.UUID, correlation_id: str) -> outbox.OutboxRow:
    return outbox.staged(topic, key, payload, event_id=event_id, producer=PRODUCER,
                         correlation_id=correlation_id)


async def _apply(uow: UnitOfWork, workspace_id: str, brand_id: str, refresh_id: str,
                 new_facts: list[Fact], supersede_ids: set[str], now: datetime,
                 correlation_id: str) -> tuple[list[str], list[str], str, list[str]]:
    """Insert/re-activate ``new_facts`` not active yet and supersede ``supersede_ids``; publish
    ``groundtruth.refreshed.v1`` if anything changed. Returns (added, superseded, hash, active)."""
    active_now = {f.fact_id for f in await uow.facts.active(workspace_id, brand_id)}
    wanted = [f for f in new_facts if f.fact_id not in active_now]
    await uow.facts.activate(workspace_id, wanted, refresh_id)
    added = [f.fact_id for f in wanted]
    superseded = sorted(supersede_ids & active_now)
    await uow.facts.supersede(superseded, now, refresh_id)
    active = await uow.facts.active(workspace_id, brand_id)
    gt_hash = ground_truth_hash(active)
    active_ids = [f.fact_id for f in active]
    if added or superseded:
        payload = GroundTruthRefreshed(brand_id=brand_id, workspace_id=workspace_id,
                                       refresh_id=refresh_id, ground_truth_hash=gt_hash,
                                       active_fact_ids=active_ids, added_fact_ids=added,
                                       superseded_fact_ids=superseded, refreshed_at=now)
        await uow.outbox.add([_event(GROUNDTRUTH_REFRESHED, brand_id, payload,
                                            derived_id("groundtruth-refreshed", refresh_id),
                                            correlation_id)])
    return added, superseded, gt_hash, active_ids


# Time kept from the refresh deadline for the write after the fetches (at most a third of it).
WRITE_RESERVE_S = 2.0


async def refresh(cmd: RefreshGroundTruth, uow: UnitOfWork, fetcher: Fetcher,
                  refresh_deadline_s: float = 8.0) -> RefreshOutcome:
    try:
        return await _refresh(uow, fetcher, cmd.workspace_id, cmd.brand_id, refresh_deadline_s)
    except TimeoutError:
        raise RefreshTimedOut(f"the refresh of brand {cmd.brand_id!r} did not finish within its "
                              f"deadline of {refresh_deadline_s:g} s; nothing changed") from None


async def _refresh(uow: UnitOfWork, fetcher: Fetcher, workspace_id: str, brand_id: str,
                   deadline_s: float) -> RefreshOutcome:
    async with asyncio.timeout(deadline_s), uow:
        started = asyncio.get_running_loop().time()
        brand = await require_brand(uow, workspace_id, brand_id)
        if not brand.sources:
            raise Conflict(f"brand {brand_id!r} has no sources to refresh from (PATCH its "
                           "sources, or add manual facts)")
        if not await uow.brands.lock_refresh(workspace_id, brand_id):
            raise RefreshInProgress(f"a refresh of brand {brand_id!r} is already running; "
                                    "retry when it has finished")
        reserve = min(WRITE_RESERVE_S, deadline_s / 3)
        budget = deadline_s - reserve - (asyncio.get_running_loop().time() - started)
        outcomes = await _fetch_all(fetcher, brand.sources, budget)
        result = await _record(uow, brand, workspace_id, brand_id, outcomes)
        await uow.commit()
    return result


async def _record(uow: UnitOfWork, brand: StoredBrand, workspace_id: str, brand_id: str,
                  outcomes: list[SourceOutcome]) -> RefreshOutcome:
    fetched = [o for o in outcomes if o.ok]
    if not fetched:
        reasons = "; ".join(f"{o.url}: {o.error}" for o in outcomes)
        if all(o.refused for o in outcomes):
            raise SourcesRefused(f"every source was refused; nothing changed: {reasons}")
        raise UpstreamFailed(f"no source could be fetched; nothing changed: {reasons}")
    now = utc_now()
    refresh_id = str(uuid.uuid4())
    new_facts: list[Fact] = []
    events: list[outbox.OutboxRow] = []
    for o in fetched:
        doc = o.document
        assert doc is not None
        text = decode_body(doc.body, doc.content_type)
        # The evidence is the document's text as UTF-8 (what the evidence store keeps); facts
        # point to it by this hash, so anyone can check a fact against the stored page.
        o.sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
        extracted = extract_facts(text)
        o.facts_extracted = len(extracted)
        for e in extracted:
            new_facts.append(Fact(fact_id=fact_id(workspace_id, brand_id, e.type, o.url, e.text),
                                  brand_id=brand_id, type=e.type, text=e.text, source_url=o.url,
                                  fetched_at=now, attribution=_attribution(o.url),
                                  content_sha256=o.sha256))
        payload = GroundTruthSourceFetched(brand_id=brand_id, workspace_id=workspace_id, url=o.url,
                                           fetched_at=now, media_type=doc.content_type or "application/octet-stream",
                                           content=text, sha256=o.sha256)
        # Same brand, URL and bytes: same event id, so an unchanged page stages nothing new.
        events.append(_event(GROUNDTRUTH_SOURCE_FETCHED, brand_id, payload,
                             derived_id("source-fetched", workspace_id, brand_id, o.url, payload.sha256),
                             refresh_id))
    new_facts = list({f.fact_id: f for f in new_facts}.values())
    new_ids = {f.fact_id for f in new_facts}
    ok_urls = {o.url for o in fetched}
    configured = set(brand.sources)
    await require_brand(uow, workspace_id, brand_id, for_update=True)
    current = await uow.facts.active(workspace_id, brand_id)
    supersede = {f.fact_id for f in current
                 if f.type not in MANUAL_TYPES and f.fact_id not in new_ids
                 and (f.source_url in ok_urls or f.source_url not in configured)}
    await uow.outbox.add(events)
    added, superseded, gt_hash, active_ids = await _apply(
        uow, workspace_id, brand_id, refresh_id, new_facts, supersede, now, refresh_id)
    return RefreshOutcome(refresh_id, brand_id, bool(added or superseded), gt_hash, active_ids,
                          added, superseded, outcomes)


async def add_manual_fact(cmd: AddManualFact, uow: UnitOfWork) -> tuple[bool, StoredFact]:
    """Add an operator-supplied fact (active at once). Returns (created, row)."""
    now = utc_now()
    workspace_id, brand_id, text = cmd.workspace_id, cmd.brand_id, " ".join(cmd.text.split())
    fid = fact_id(workspace_id, brand_id, cmd.type, cmd.source_url, cmd.text)
    fact = Fact(fact_id=fid, brand_id=brand_id, type=cmd.type, text=text,
                source_url=cmd.source_url, fetched_at=now, attribution=cmd.attribution,
                content_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())
    refresh_id = str(uuid.uuid4())
    async with uow:
        await require_brand(uow, workspace_id, brand_id, for_update=True)
        added, _, _, _ = await _apply(uow, workspace_id, brand_id, refresh_id, [fact], set(), now,
                                      refresh_id)
        stored = await uow.facts.get(fid)
        await uow.commit()
    assert stored is not None
    return bool(added), stored
