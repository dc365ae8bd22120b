"""The verdict cache on the real Redis (attesta_testing.infra.redis_url()), including a Redis
that is down or hangs: judging must go on without it."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
import redis.asyncio as aioredis

from attesta_classifier.adapters.judges import Judge, JudgeUnavailable
from attesta_classifier.adapters.verdict_cache import CachedJudge, verdict_key
from attesta_classifier.domain.model import Brand, Decision, Fact, Run
from attesta_contracts.classification import CitationClass
from attesta_testing.infra import redis_url

pytestmark = pytest.mark.integration

BRAND = Brand("lumora", "ws", "Lumora Therapeutics", ("Lumora",), ("lumora.example",))
AT = datetime(2026, 12, 1, tzinfo=UTC)
FACT = Fact("f_founded", "lumora", "structured", "Lumora Therapeutics — founding date: 2009",
            "https://lumora.example/about", AT, "lumora.example", "a" * 64)


def make_run(answer: str = "Lumora was founded in 1999.") -> Run:
    return Run("run-1", "ws", "chatgpt", "gpt-x", "Tell me about Lumora", answer, "0" * 64)


class CountingJudge:
    """A deterministic inner judge that counts its calls (the thing the cache saves)."""

    def __init__(self, model_name: str = "model-a", prompt_version: str = "p1",
                 fail: bool = False) -> None:
        self.model_name = model_name
        self.prompt_version = prompt_version
        self.calls = 0
        self.fail = fail

    async def judge(self, *, run: Run, brand: Brand, facts: Sequence[Fact]) -> Decision:
        self.calls += 1
        if self.fail:
            raise JudgeUnavailable("down")
        return Decision(CitationClass.CONFABULATED, f"1999 contradicts {facts[0].fact_id}", "judge",
                        (facts[0].fact_id,), self.model_name, "", self.prompt_version)


@pytest.fixture
async def redis_client():
    client = aioredis.from_url(redis_url(), socket_timeout=2)
    yield client
    await client.aclose()


@pytest.fixture
def prefix() -> str:
    return f"test:verdicts:{uuid.uuid4().hex}"


async def _cleanup(client: aioredis.Redis, prefix: str) -> None:
    keys = [k async for k in client.scan_iter(f"{prefix}:*")]
    if keys:
        await client.delete(*keys)


async def test_miss_then_hit(redis_client: aioredis.Redis, prefix: str) -> None:
    inner = CountingJudge()
    judge: Judge = CachedJudge(inner, redis_client, ttl_s=600, prefix=prefix)
    try:
        first = await judge.judge(run=make_run(), brand=BRAND, facts=[FACT])
        second = await judge.judge(run=make_run(), brand=BRAND, facts=[FACT])
        assert first == second and inner.calls == 1
        assert judge.stats == {"hits": 1, "misses": 1, "errors": 0}
        key = verdict_key(make_run(), BRAND, [FACT], "model-a", "p1", prefix)
        assert 0 < await redis_client.ttl(key) <= 600
        # another run id with the same answer text hits too (a backfill replays answers)
        other = dataclasses.replace(make_run(), run_id="run-2")
        assert await judge.judge(run=other, brand=BRAND, facts=[FACT]) == first
        assert inner.calls == 1
    finally:
        await _cleanup(redis_client, prefix)


async def test_each_key_part_matters(redis_client: aioredis.Redis, prefix: str) -> None:
    inner = CountingJudge()
    judge = CachedJudge(inner, redis_client, prefix=prefix)
    changed_fact = dataclasses.replace(FACT, text="Lumora Therapeutics — founding date: 2010")
    try:
        await judge.judge(run=make_run(), brand=BRAND, facts=[FACT])
        await judge.judge(run=make_run("Lumora was founded in 1998."), brand=BRAND, facts=[FACT])
        await judge.judge(run=make_run(), brand=BRAND, facts=[changed_fact])  # new groundTruthHash
        assert inner.calls == 3
        for model, version in (("model-b", "p1"), ("model-a", "p2")):
            other = CachedJudge(CountingJudge(model, version), redis_client, prefix=prefix)
            await other.judge(run=make_run(), brand=BRAND, facts=[FACT])
            assert other.stats["misses"] == 1 and other.inner.calls == 1
        assert await redis_client.ttl(verdict_key(make_run(), BRAND, [FACT], "model-a", "p1", prefix)) == -1
    finally:
        await _cleanup(redis_client, prefix)


async def test_corrupt_entry_is_ignored_and_replaced(redis_client: aioredis.Redis, prefix: str) -> None:
    inner = CountingJudge()
    judge = CachedJudge(inner, redis_client, prefix=prefix)
    key = verdict_key(make_run(), BRAND, [FACT], "model-a", "p1", prefix)
    try:
        for garbage in (b"{not json", b'{"class": "STRONG", "reason": "x", "fact_ids": [],'
                        b' "judge_model": "model-a", "prompt_version": "p1"}'):
            await redis_client.set(key, garbage)
            d = await judge.judge(run=make_run(), brand=BRAND, facts=[FACT])
            assert d.citation_class is CitationClass.CONFABULATED
        assert inner.calls == 2 and judge.stats["errors"] == 2
        assert b"CONFABULATED" in await redis_client.get(key)
    finally:
        await _cleanup(redis_client, prefix)


async def test_unavailable_judge_is_not_cached(redis_client: aioredis.Redis, prefix: str) -> None:
    judge = CachedJudge(CountingJudge(fail=True), redis_client, prefix=prefix)
    with pytest.raises(JudgeUnavailable):
        await judge.judge(run=make_run(), brand=BRAND, facts=[FACT])
    assert [k async for k in redis_client.scan_iter(f"{prefix}:*")] == []


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


async def test_redis_down_does_not_break_judging() -> None:
    client = aioredis.from_url(f"redis://127.0.0.1:{_closed_port()}/0", socket_connect_timeout=0.5)
    inner = CountingJudge()
    judge = CachedJudge(inner, client)
    try:
        d = await judge.judge(run=make_run(), brand=BRAND, facts=[FACT])
        assert d.citation_class is CitationClass.CONFABULATED and inner.calls == 1
        assert judge.stats["errors"] == 2  # the read and the write, both logged and bypassed
    finally:
        await client.aclose()


async def test_redis_that_hangs_is_bypassed_within_the_op_timeout() -> None:
    """A server that accepts connections and never answers (a stuck Redis)."""
    accepted: list[asyncio.StreamWriter] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = aioredis.from_url(f"redis://127.0.0.1:{port}/0")
    inner = CountingJudge()
    judge = CachedJudge(inner, client, op_timeout_s=0.2)
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        d = await judge.judge(run=make_run(), brand=BRAND, facts=[FACT])
        assert loop.time() - started < 2.0
        assert d.citation_class is CitationClass.CONFABULATED and judge.stats["errors"] == 2
    finally:
        for w in accepted:
            w.close()
        server.close()
        await client.aclose()


async def test_backfill_does_not_pay_twice_for_the_llm(redis_client: aioredis.Redis, prefix: str) -> None:
    """The LLM judge behind the cache: a replayed answer makes no second HTTP request."""
    from attesta_classifier.adapters.judges import LLMJudge
    from attesta_platform.llm import ChatCompletionsClient, LLMConfig
    from attesta_testing.chat_server import FakeChatServer, FakeReply

    with FakeChatServer() as server:
        server.responder = lambda body: FakeReply.json(
            {"class": "CONFABULATED", "reason": "1999 contradicts f_founded", "claims": [
                {"claim": "founded in 1999", "verdict": "contradicted", "fact_ids": ["f_founded"]}]})
        llm = LLMJudge(ChatCompletionsClient(LLMConfig(base_url=server.base_url, model="openai/gpt-4o-mini",
                                                       attempts=1, timeout_s=2.0)))
        judge = CachedJudge(llm, redis_client, ttl_s=60, prefix=prefix)
        try:
            live = await judge.judge(run=make_run(), brand=BRAND, facts=[FACT])
            replay = await judge.judge(run=dataclasses.replace(make_run(), run_id="run-9"),
                                       brand=BRAND, facts=[FACT])
        finally:
            await llm.aclose()
            await _cleanup(redis_client, prefix)
    assert live == replay and live.judge_model == "openai/gpt-4o-mini"
    assert len(server.requests) == 1
