"""Kafka intake on the real broker: runs and fetched sources become evidence; the same content
twice is one record with both references; redelivery changes nothing; oversized or malformed
input is dead-lettered with the reason; evidence.recorded.v1 leaves through the outbox."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import uuid
from datetime import UTC, datetime
from functools import partial

import pytest

from attesta_contracts import Envelope
from attesta_contracts.collection import EngineResponseCaptured
from attesta_contracts.groundtruth import GroundTruthSourceFetched
from attesta_contracts.runs import RunRecorded
from attesta_contracts.topics import (
    DEAD_LETTERED,
    ENGINE_RESPONSE_CAPTURED,
    EVIDENCE_RECORDED,
    GROUNDTRUTH_SOURCE_FETCHED,
    RUNS_RECORDED,
)
from attesta_evidence.adapters.postgres import EvidenceUnitOfWork
from attesta_evidence.bootstrap import build_bus
from attesta_evidence.entrypoints.consumers import register_consumers
from attesta_platform import outbox
from attesta_platform.messaging import Messaging
from attesta_testing.infra import kafka_bootstrap, publish_raw

pytestmark = pytest.mark.integration

MAX_BYTES = 2_000


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def run(run_id: str, answer: str, claimed: str | None = None) -> RunRecorded:
    now = datetime.now(UTC)
    return RunRecorded(run_id=run_id, workspace_id="ws-kafka", engine="test-engine", model="m",
                       prompt="q?", answer=answer, answer_sha256=claimed or sha(answer),
                       requested_at=now, answered_at=now)


def source(content: str, media_type: str = "text/html; charset=utf-8") -> GroundTruthSourceFetched:
    return GroundTruthSourceFetched(brand_id="brandly", workspace_id="ws-kafka",
                                    url="https://brandly.example/about", fetched_at=datetime.now(UTC),
                                    media_type=media_type, content=content, sha256=sha(content))


async def eventually(check, timeout_s: float = 60.0):
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met in {timeout_s}s: {check.__name__}")
        await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def running(app_pool, messaging: Messaging, subscribers: list):
    """The intake's topics made, messaging and the outbox relay started, every subscriber
    assigned its partitions; all stopped afterwards."""
    await messaging.ensure_topics([RUNS_RECORDED, GROUNDTRUTH_SOURCE_FETCHED,
                                   ENGINE_RESPONSE_CAPTURED, DEAD_LETTERED, EVIDENCE_RECORDED])
    await messaging.start()
    stop = asyncio.Event()
    relay = asyncio.create_task(outbox.run_relay(app_pool, messaging, stop))
    try:
        for sub in subscribers:
            await messaging.wait_assigned(sub, timeout_s=60)
        yield
    finally:
        stop.set()
        await relay
        await messaging.stop()


async def test_intake_dedup_redelivery_dead_letters_and_outbox(app_pool):
    marker = uuid.uuid4().hex
    group = f"evidence-test-{marker[:8]}"
    messaging = Messaging(kafka_bootstrap(), f"evidence-test-{marker[:8]}")
    by_topic = register_consumers(messaging, build_bus(partial(EvidenceUnitOfWork, app_pool), events=messaging), MAX_BYTES, group_id=group,
                                  auto_offset_reset="latest")
    subscribers = [s for subs in by_topic.values() for s in subs]
    dead: list[Envelope] = []
    recorded: list[Envelope] = []

    async def on_dead(env, delivery):
        if env.payload.consumer == group:
            dead.append(env)

    async def on_recorded(env, delivery):
        # other evidence instances (other engineers' systems) publish on the same topic
        if env.producer == messaging.producer:
            recorded.append(env)

    subscribers.append(messaging.consume(DEAD_LETTERED, group_id=f"{group}-dlq", handler=on_dead,
                                         auto_offset_reset="latest"))
    subscribers.append(messaging.consume(EVIDENCE_RECORDED, group_id=f"{group}-out",
                                         handler=on_recorded, auto_offset_reset="latest"))
    async with running(app_pool, messaging, subscribers):

        answer = f"The answer {marker}: Brandly is at https://brandly.example/ \N{SNOWMAN}"
        page = f"<html>Brandly {marker}</html>"
        first = await messaging.publish(RUNS_RECORDED, run(f"r1-{marker}", answer),
                                        key=f"r1-{marker}", correlation_id=marker)
        await messaging.publish(RUNS_RECORDED, run(f"r2-{marker}", answer), key=f"r2-{marker}",
                                correlation_id=marker)
        await messaging.publish_envelope(RUNS_RECORDED, first, key=f"r1-{marker}")  # redelivery
        await messaging.publish(RUNS_RECORDED, run(f"r1-{marker}", answer), key=f"r1-{marker}",
                                correlation_id=marker)  # same run, new event id
        await messaging.publish(GROUNDTRUTH_SOURCE_FETCHED, source(page), key="brandly",
                                correlation_id=marker)
        # poison: too large, lying hash, a media type that is not one line, bytes that are no event
        await messaging.publish(RUNS_RECORDED, run(f"big-{marker}", "x" * (MAX_BYTES + 1)),
                                key="big", correlation_id=marker)
        await messaging.publish(RUNS_RECORDED, run(f"liar-{marker}", "honest",
                                                   claimed=sha("something else")),
                                key="liar", correlation_id=marker)
        await messaging.publish(GROUNDTRUTH_SOURCE_FETCHED,
                                source(f"odd {marker}", media_type="text/html\nx-evil: 1"),
                                key="brandly", correlation_id=marker)
        await publish_raw(messaging, RUNS_RECORDED, f"not an event {marker}".encode(), key=b"junk")

        async def all_dead_lettered():
            mine = [d for d in dead if marker in base64.b64decode(d.payload.original_b64).decode(
                "utf-8", "replace")]
            return mine if len(mine) >= 4 else None

        letters = await eventually(all_dead_lettered)
        reasons = sorted(d.payload.error for d in letters)
        assert any("takes at most 2000" in r for r in reasons), reasons
        assert any("does not match the content" in r for r in reasons), reasons
        assert any("media type" in r for r in reasons), reasons
        assert any("not UTF-8" in r or "invalid RunRecorded envelope" in r for r in reasons), reasons

        async def three_events_out():
            mine = [e for e in recorded if e.payload.sha256 in (sha(answer), sha(page))]
            return mine if len(mine) >= 3 else None

        events = await eventually(three_events_out)
        await asyncio.sleep(1.0)  # a redelivery would have produced more by now
        events = [e for e in recorded if e.payload.sha256 in (sha(answer), sha(page))]
        by_ref = {e.payload.reference.ref_id: e.payload for e in events}
        assert sorted(by_ref) == sorted([f"r1-{marker}", f"r2-{marker}",
                                         "brandly https://brandly.example/about"])
        # r1 and r2 sit on different partitions: either may store the bytes first, the other
        # only adds its reference
        assert sorted([by_ref[f"r1-{marker}"].new_content, by_ref[f"r2-{marker}"].new_content]) \
            == [False, True]
        assert by_ref[f"r1-{marker}"].log_index == by_ref[f"r2-{marker}"].log_index
        assert by_ref["brandly https://brandly.example/about"].new_content
        assert len({e.event_id for e in events}) == 3
        assert all(e.payload.workspace_id == "ws-kafka" for e in events)
        async with EvidenceUnitOfWork(app_pool).read() as uow:
            stored = await uow.evidence.get(sha(answer))
            assert stored is not None and stored.media_type == "text/plain; charset=utf-8"
            assert await uow.evidence.content(sha(answer)) == answer.encode()
            assert (await uow.evidence.public_view(sha(answer)))[1] == {"run": 2}
            assert (await uow.evidence.public_view(sha(page)))[1] == {"ground_truth_source": 1}
            assert (await uow.evidence.get(sha(page))).media_type == \
                "text/html; charset=utf-8"
            assert await uow.evidence.get(sha("x" * (MAX_BYTES + 1))) is None
            assert await uow.evidence.get(sha("honest")) is None
            assert await uow.connection.fetchval(
                "SELECT count(*) FROM messaging_outbox WHERE published_at IS NULL") == 0


async def test_engine_raw_responses_become_evidence_referenced_by_their_run(app_pool):
    marker = uuid.uuid4().hex
    group = f"evidence-raw-{marker[:8]}"
    messaging = Messaging(kafka_bootstrap(), group)
    by_topic = register_consumers(messaging, build_bus(partial(EvidenceUnitOfWork, app_pool), events=messaging), MAX_BYTES, group_id=group,
                                  auto_offset_reset="latest")
    recorded: list[Envelope] = []

    async def on_recorded(env, delivery):
        if env.producer == messaging.producer:
            recorded.append(env)

    subscribers = [s for subs in by_topic.values() for s in subs]
    subscribers.append(messaging.consume(EVIDENCE_RECORDED, group_id=f"{group}-out",
                                         handler=on_recorded, auto_offset_reset="latest"))
    async with running(app_pool, messaging, subscribers):
        body = ('{"id":"chatcmpl-%s","choices":[{"message":{"role":"assistant","content":'
                '"Brandly \\u2603 https://brandly.example/"}}]}' % marker)
        captured = EngineResponseCaptured(run_id=f"col-{marker}", collection_id=f"col-{marker}",
                                          workspace_id="ws-kafka", content=body, sha256=sha(body),
                                          captured_at=datetime.now(UTC))
        first = await messaging.publish(ENGINE_RESPONSE_CAPTURED, captured,
                                        key=captured.run_id, correlation_id=marker)
        await messaging.publish_envelope(ENGINE_RESPONSE_CAPTURED, first, key=captured.run_id)

        async def recorded_once():
            return [e for e in recorded if e.payload.sha256 == sha(body)] or None

        [event] = await eventually(recorded_once)
        await asyncio.sleep(1.0)  # the redelivery would have produced a second one by now
        assert [e for e in recorded if e.payload.sha256 == sha(body)] == [event]
        assert event.payload.reference.kind == "engine_response"
        assert event.payload.reference.ref_id == f"col-{marker}"
        assert event.payload.media_type == "application/json" and event.payload.new_content
        async with EvidenceUnitOfWork(app_pool).read() as uow:
            assert await uow.evidence.content(sha(body)) == body.encode()
            assert (await uow.evidence.public_view(sha(body)))[1] == {"engine_response": 1}
