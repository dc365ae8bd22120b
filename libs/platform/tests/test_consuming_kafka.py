"""The consume path against a real broker: batch handlers (poison, rejection, re-read after a
dependency outage) and the group-less replay of a compacted topic with real tombstones."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import TopicPartition

from attesta_contracts.chat import ChatRequested
from attesta_contracts.topics import CHAT_REQUESTED, DEAD_LETTERED
from attesta_platform.consuming import Decision, decide
from attesta_platform.errors import PermanentError, TransientError
from attesta_platform.messaging import Messaging, RetryPolicy, TopicCopy, topic_or_copy
from attesta_testing.infra import kafka_bootstrap, publish_raw


def test_decide_is_the_one_rule():
    policy = RetryPolicy(attempts=3)
    assert decide(TransientError("x"), 1, policy) is Decision.RETRY
    assert decide(ConnectionError("x"), 2, policy) is Decision.RETRY
    assert decide(TransientError("x"), 3, policy) is Decision.REREAD
    assert decide(PermanentError("x"), 1, policy) is Decision.DEAD_LETTER
    assert decide(ValueError("x"), 1, policy) is Decision.DEAD_LETTER


async def test_a_topic_copy_is_read_by_its_contract():
    assert topic_or_copy(CHAT_REQUESTED, CHAT_REQUESTED) == CHAT_REQUESTED
    copy = topic_or_copy(CHAT_REQUESTED, "mirror.chat")
    assert copy == TopicCopy(CHAT_REQUESTED, "mirror.chat")

    async def nothing(items):
        return []

    consumer = Messaging("127.0.0.1:1", "t").batch_consumer(copy, group_id="g", handler=nothing)
    await consumer.consumer.stop()  # never started: nothing to reach
    assert (consumer.topic, consumer.spec.name) == ("mirror.chat", CHAT_REQUESTED)
    with pytest.raises(KeyError):
        TopicCopy("no.such.contract.v1", "mirror.x")


async def _until(cond, timeout: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


def _ask(m: Messaging, rid: str, question: str = "q"):
    return m.envelope(CHAT_REQUESTED, ChatRequested(request_id=rid, question=question),
                      correlation_id=rid)


@pytest.mark.integration
async def test_batch_handler_one_call_per_batch_poison_rejections_and_reread():
    bootstrap = kafka_bootstrap()
    # A private topic carrying the chat contract (not registered: the registry stays as shipped).
    topic = f"test-batch-{uuid.uuid4().hex[:8]}.{CHAT_REQUESTED}"
    m = Messaging(bootstrap, "test-batch", RetryPolicy(attempts=2, initial_delay_s=0.01,
                                                       max_delay_s=0.2))
    await m.ensure_topics([topic, DEAD_LETTERED], partitions=1)
    calls: list[list[str]] = []
    effects: list[str] = []
    outage = {"left": 3}  # the first 3 calls that see "flaky" fail transiently

    async def handler(items):
        rids = [i.envelope.payload.request_id for i in items]
        calls.append(rids)
        if "flaky" in rids and outage["left"] > 0:
            outage["left"] -= 1
            raise TransientError("database away")
        if "boom" in rids:
            raise ValueError("poison breaks the whole batch")
        effects.extend(r for r in rids if r != "reject")
        return [(i, "rule says no") for i in items if i.envelope.payload.request_id == "reject"]

    group = f"test-batch-{uuid.uuid4().hex[:8]}"
    consumer = m.consume_batch(TopicCopy(CHAT_REQUESTED, topic), group_id=group, handler=handler,
                               batch_max=50)
    await m.start()
    try:
        await publish_raw(m, topic, b"\xff not json", key=b"k")
        for rid in ("a", "reject", "b", "boom", "c", "flaky", "d"):
            await m.publish_envelope(topic, _ask(m, rid), key="k")
        await _until(lambda: "d" in effects)
        await consumer.committer.flush()
        committed = await consumer.consumer.committed(
            next(iter(consumer.consumer.assignment())))
    finally:
        await m.stop()
    # Every good message's effect exactly once here (no crash), and in order.
    assert sorted(set(effects)) == ["a", "b", "c", "d", "flaky"]
    assert consumer.progress.dead_lettered == 3  # undecodable, rejected, poison
    assert committed == 8  # all 8 records, dead letters included
    # The poison failed its batch, which was then retried one message at a time.
    assert any(c == ["boom"] for c in calls)
    # The outage: retried in place, then re-read (not committed past it), then it passed.
    assert outage["left"] == 0 and effects.count("flaky") >= 1


@pytest.mark.integration
async def test_compacted_replay_sees_every_record_and_tombstones_delete():
    bootstrap = kafka_bootstrap()
    topic = f"test-replay-{uuid.uuid4().hex[:8]}.kb.cards.v1"
    m = Messaging(bootstrap, "test-replay")
    await m.ensure_topics([topic, DEAD_LETTERED], partitions=2)
    await m.start()
    state: dict[str, str | None] = {}

    async def handler(items):
        for key, env, _ in items:
            state[key] = None if env is None else env.payload.content_sha256
        return []

    from attesta_contracts.kb import KbCard, KbCardPublished

    def card(cid: str, sha: str) -> KbCardPublished:
        return KbCardPublished(card=KbCard(card_id=cid, title="t", text="x"), content_sha256=sha)

    replays = []
    try:
        for cid in ("c1", "c2", "c3"):
            env = m.envelope("kb.cards.v1", card(cid, cid[-1] * 64), correlation_id=cid)
            await m.publish_envelope(topic, env, key=cid)
        await m.publish_tombstone(topic, "c2")
        await publish_raw(m, topic, b"not an envelope", key=b"c4")
        # Two readers (two instances): each sees everything, no group splits the partitions.
        for _ in range(2):
            r = m.replay(TopicCopy("kb.cards.v1", topic), name="test-replay", handler=handler,
                         client_id=f"t-{uuid.uuid4().hex[:4]}")
            await r.start()
            replays.append(r)
            while not r.caught_up.is_set():
                await r.poll(timeout_ms=200)
            assert state == {"c1": "1" * 64, "c2": None, "c3": "3" * 64}
            assert r.dead_lettered == 1
            assert await r.progress() == (5, 5)
            state.clear()
        # Following the topic after the replay: a live tombstone arrives as a deletion.
        await m.publish_tombstone(topic, "c1")
        await _until_polled(replays[0], lambda: state.get("c1", "x") is None)
    finally:
        for r in replays:
            await r.stop()
        await m.stop()


async def _until_polled(replay, cond, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await replay.poll(timeout_ms=200)


@pytest.mark.integration
async def test_concurrency_overlaps_keys_keeps_each_keys_order_and_rereads_from_the_gap():
    bootstrap = kafka_bootstrap()
    topic = f"test-keys-{uuid.uuid4().hex[:8]}.{CHAT_REQUESTED}"
    m = Messaging(bootstrap, "test-keys", RetryPolicy(attempts=1, initial_delay_s=0.01,
                                                      max_delay_s=0.2))
    await m.ensure_topics([topic, DEAD_LETTERED], partitions=1)
    log: list[tuple[str, str]] = []
    active, peak = {"n": 0}, {"n": 0}
    outage = {"left": 1}

    async def handler(env, d):
        rid = env.payload.request_id
        key = d.key.decode()
        active["n"] += 1
        peak["n"] = max(peak["n"], active["n"])
        try:
            if rid == "b1" and outage["left"]:
                outage["left"] -= 1
                raise TransientError("away once")
            await asyncio.sleep(0.05 if key == "slow" else 0.0)
            log.append((key, rid))
        finally:
            active["n"] -= 1

    group = f"test-keys-{uuid.uuid4().hex[:8]}"
    consumer = m.consume(TopicCopy(CHAT_REQUESTED, topic), group_id=group, handler=handler,
                         concurrency=8)
    await m.start()
    try:
        envs = [("slow", f"s{i}") for i in range(5)] + [(f"k{i}", f"f{i}") for i in range(5)] \
            + [("b", "b0"), ("b", "b1"), ("b", "b2")]
        await asyncio.gather(*(m.publish_envelope(topic, _ask(m, rid), key=key) for key, rid in envs[:1]))
        for key, rid in envs[1:]:
            await m.publish_envelope(topic, _ask(m, rid), key=key)
        await _until(lambda: {r for _, r in log} >= {r for _, r in envs})
        await consumer.committer.flush()
        committed = await consumer.consumer.committed(next(iter(consumer.consumer.assignment())))
    finally:
        await m.stop()
    for key in ("slow", "b"):
        mine = [r for k, r in log if k == key]
        firsts = list(dict.fromkeys(mine))
        assert firsts == sorted(firsts), (key, mine)  # one key: in order (a re-read may repeat)
    assert peak["n"] > 1  # different keys overlapped
    assert committed == len(envs)


@pytest.mark.integration
async def test_overlapping_batches_keep_partition_order_and_commit_after_outputs():
    """overlap=3 on 3 partitions: batches of different partitions run at once, never two of
    one partition; each batch finds the broker's committed offset of its partitions at or
    below its first record (nothing committed before its outputs); a dependency outage on one
    partition re-reads it while the others go on; every effect once, in order per key."""
    bootstrap = kafka_bootstrap()
    topic = f"test-overlap-{uuid.uuid4().hex[:8]}.{CHAT_REQUESTED}"
    m = Messaging(bootstrap, "test-overlap", RetryPolicy(attempts=2, initial_delay_s=0.01,
                                                         max_delay_s=0.2))
    await m.ensure_topics([topic, DEAD_LETTERED], partitions=3)
    effects: list[tuple[int, int, str]] = []  # (partition, offset, request id), when durable
    early: list[str] = []
    active, peak, busy = {"n": 0}, {"n": 0}, set()
    outage = {"left": 3}
    group = f"test-overlap-{uuid.uuid4().hex[:8]}"
    consumer = None

    async def handler(items):
        mine = {i.delivery.partition for i in items}
        assert not mine & busy, "two batches of one partition at once"
        busy.update(mine)
        active["n"] += 1
        peak["n"] = max(peak["n"], active["n"])
        try:
            for p in mine:  # the broker's committed offset, as the batch starts
                first = min(i.delivery.offset for i in items if i.delivery.partition == p)
                committed = await consumer.consumer.committed(TopicPartition(topic, p))
                if committed is not None and committed > first:
                    early.append(f"{p}: committed {committed} before {first} was handled")
            if any(i.envelope.payload.request_id == "k1-7" for i in items) and outage["left"]:
                outage["left"] -= 1
                raise TransientError("database away")
            await asyncio.sleep(0.03)  # the database's time: another batch's CPU runs meanwhile
            effects.extend((i.delivery.partition, i.delivery.offset, i.envelope.payload.request_id)
                           for i in items)
            return []
        finally:
            active["n"] -= 1
            busy.difference_update(mine)

    consumer = m.consume_batch(TopicCopy(CHAT_REQUESTED, topic), group_id=group, handler=handler,
                               batch_max=5, overlap=3)
    sent = [(f"k{k}", f"k{k}-{i}") for i in range(20) for k in range(6)]
    await m.start()
    try:
        await m.wait_assigned(consumer)
        for b in range(0, len(sent), 30):
            await asyncio.gather(*(m.publish_envelope(topic, _ask(m, rid), key=key)
                                   for key, rid in sent[b:b + 30]))
        await _until(lambda: {r for _, _, r in effects} >= {r for _, r in sent}, 20)
        await consumer.committer.flush()
        committed = {tp.partition: await consumer.consumer.committed(tp)
                     for tp in consumer.consumer.assignment()}
        ends = await consumer.consumer.end_offsets(list(consumer.consumer.assignment()))
    finally:
        await m.stop()
    assert early == []
    assert peak["n"] > 1  # batches did overlap
    assert outage["left"] == 0
    assert committed == {tp.partition: end for tp, end in ends.items()}
    for key in {k for k, _ in sent}:
        mine = [int(r.split("-")[1]) for _, _, r in effects if r.startswith(f"{key}-")]
        assert mine == list(range(20)), (key, mine)  # each once, in order
    per_partition: dict[int, list[int]] = {}
    for p, offset, _ in effects:
        per_partition.setdefault(p, []).append(offset)
    assert all(o == sorted(o) for o in per_partition.values())
