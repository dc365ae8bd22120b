"""kill -9 of a collector in the middle of a slot, then a restart: every sample of the slot is
on the runs topic exactly once (counted by run id and event id), nothing collected is lost."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime

import orjson
import pytest

from attesta_collector.adapters.brands import StaticBrandDirectory
from attesta_collector.domain.commands import (
    CreateEngine,
    CreatePrompt,
    CreateSchedule,
    GetSlotProgress,
)
from attesta_collector.domain.model import EngineSpec, PromptSpec, ScheduleSpec
from attesta_collector.fake_engine import FakeEngine
from attesta_collector.service_layer import catalog
from attesta_testing.collector import allow_url, engine_checks
from attesta_contracts import derived_id
from attesta_contracts.topics import RUNS_RECORDED
from attesta_platform.messaging import ensure_topics
from attesta_testing.infra import alias_topic, kafka_bootstrap, read_from

pytestmark = pytest.mark.integration

WS = f"ws-kill-{uuid.uuid4().hex[:6]}"
SLOT = datetime(2026, 12, 4, 9, tzinfo=UTC)
KEK = base64.b64encode(os.urandom(32)).decode()  # both collector processes: one operator KEK


def spawn(collector_db, prefix: str, log, engine_url: str) -> subprocess.Popen:
    env = {**os.environ, "ATTESTA_COLLECTOR_DATABASE_URL": collector_db.app_url,
           "ATTESTA_FETCH_ALLOW": allow_url(engine_url),  # the fake engine, as an operator would
           "ATTESTA_COLLECTOR_SECRETS_KEK": KEK,
           "ATTESTA_COLLECTOR_LEASE_MARGIN_S": "1", "ATTESTA_LOG_JSON": "false",
           "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap()}
    return subprocess.Popen([sys.executable, "-m", "attesta_testing.collector", prefix, WS, "sch",
                             SLOT.isoformat()], env=env, stdout=log, stderr=subprocess.STDOUT)


async def counts(new_uow) -> dict[str, int]:
    return await catalog.get_slot_progress(GetSlotProgress(WS, "sch", SLOT), new_uow())


async def leased(pool) -> int:
    async with pool.acquire() as conn:
        return await conn.fetchval("SELECT count(*) FROM collections WHERE status='pending' "
                                   "AND lease_until > now()")


async def test_kill_9_mid_slot_then_restart_gives_every_sample_once(pool, new_uow, collector_db,
                                                                    tmp_path):
    prefix = f"k{uuid.uuid4().hex[:8]}"
    runs_topic = alias_topic(RUNS_RECORDED, prefix)
    await ensure_topics(kafka_bootstrap(), [runs_topic], 3)
    engine = FakeEngine(latency_ms=250).start()
    try:
        brands = StaticBrandDirectory({})
        for i in range(4):
            await catalog.create_prompt(CreatePrompt(WS, PromptSpec(text=f"sleep question {i}")),
                                        new_uow(), brands)
        await catalog.create_engine(CreateEngine(WS, EngineSpec(
            engine_id="fake", name="fake", base_url=engine.base_url, model="fake-1",
            concurrency=2, timeout_s=2, retry={"attempts": 1})),
            new_uow(), engine_checks(allow_url(engine.base_url)))
        await catalog.create_schedule(CreateSchedule(WS, ScheduleSpec(
            schedule_id="sch", engine_ids=["fake"], interval_s=3600, samples=3)), new_uow())
        log = open(tmp_path / "collector.log", "wb")
        first = spawn(collector_db, prefix, log, engine.base_url)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 180  # a cold start imports everything: slow on a busy machine
        while (await counts(new_uow)).get("collected", 0) < 3 or not await leased(pool):
            assert first.poll() is None, (tmp_path / "collector.log").read_text()
            assert loop.time() < deadline, "the first collector collected nothing"
            await asyncio.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)  # mid-slot: two samples in flight
        first.wait(10)
        at_kill = {**await counts(new_uow), "leased": await leased(pool)}
        assert at_kill["leased"] > 0, at_kill  # it really died mid-slot, with samples in hand
        second = spawn(collector_db, prefix, log, engine.base_url)
        assert second.wait(120) == 0, (tmp_path / "collector.log").read_text()
        assert await counts(new_uow) == {"collected": 12}
        async with pool.acquire() as conn:
            ids = {r["collection_id"] for r in await conn.fetch("SELECT collection_id FROM collections")}
            assert await conn.fetchval("SELECT count(*) FROM messaging_outbox "
                                       "WHERE published_at IS NULL") == 0
        envs = [orjson.loads(v) for v in await read_from(
            kafka_bootstrap(), runs_topic, {p: 0 for p in range(3)},
            lambda v: WS.encode() in v, expected=12, settle_s=1.0)]
        run_ids = [e["payload"]["run_id"] for e in envs]
        assert set(run_ids) == ids and len(ids) == 12
        # One event per sample: a redelivered copy could only be the relay's resend of the same
        # event id (consumers' inboxes drop it); no sample has two different events.
        by_run = {}
        for e in envs:
            by_run.setdefault(e["payload"]["run_id"], set()).add(e["event_id"])
        assert all(ev == {str(derived_id("collector-run", rid))} for rid, ev in by_run.items())
        print(f"runs on the topic: {len(envs)} messages, {len(set(run_ids))} distinct; "
              f"engine asked {engine.state.requests} times for 12 samples; at kill: {at_kill}")
    finally:
        engine.stop()
