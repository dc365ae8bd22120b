"""Chat round trip over real Kafka vs the same handlers called in-process, side by side.

    .venv/bin/python benchmarks/roundtrip_kafka.py            # 500 sequential + 16 concurrent,
                                                              # consumer concurrency 1 and 16,
                                                              # one process and one per stage
    .venv/bin/python benchmarks/roundtrip_kafka.py --fetch-max-wait-ms 500 10

What runs: the walking skeleton's chain gateway -> retrieval -> answer -> gateway through the
real ``attesta_platform.messaging.Messaging`` code paths (three Messaging instances, each with
its own idempotent acks=all producer and manually committing consumer group, so every hop is a
real produce, fetch and offset commit on the broker), in two layouts side by side:
``one-process`` (all three stages and the gateway share this process's event loop) and
``processes`` (retrieval and answer each run in their own OS process, started from this script
with ``--stage``, as the deployed services do; the gateway side stays in this process). The handlers are the skeleton's
(BM25 over the 584 KB cards with bm25s, then the best-overlap sentence as the answer), inlined
here so the numbers do not move while the services are rewritten. The in-process baseline calls
the very same handler functions directly (envelopes built the same way, no bytes, no broker).

The run uses private topics ``bench-<run>.*`` with the chat payload contracts, so services that
are running on the shared broker do not consume its load; they are deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import platform
import re
import signal
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import bm25s
import psutil

from attesta_contracts import Envelope, derived_id
from attesta_contracts.chat import (
    AnswerStatus,
    ChatAnswered,
    ChatRequested,
    ChunkScores,
    Citation,
    ContextChunk,
    RetrievalCompleted,
)
from attesta_contracts.topics import CHAT_ANSWERED, CHAT_REQUESTED, RETRIEVAL_COMPLETED
from attesta_kb import load_cards, load_queries
from attesta_platform.consuming import GroupConsumer
from attesta_platform.messaging import Delivery, Messaging
from attesta_testing.infra import alias_topic, drop_topics

# -- the skeleton's handlers -------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class LexicalIndex:
    def __init__(self, cards: list[dict]) -> None:
        self.cards = cards
        self.bm25 = bm25s.BM25()
        self.bm25.index(bm25s.tokenize([f"{c['title']}\n{c['text']}" for c in cards],
                                       stopwords="en", show_progress=False), show_progress=False)

    def search(self, question: str, k: int) -> list[ContextChunk]:
        tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, scores = self.bm25.retrieve(tokens, k=min(k, len(self.cards)), show_progress=False)
        out = []
        for idx, score in zip(docs[0], scores[0], strict=True):
            if score > 0:
                c = self.cards[int(idx)]
                out.append(ContextChunk(id=c["card_id"], card_id=c["card_id"], title=c["title"],
                                        text=c["text"], source=c.get("source"),
                                        metadata=c.get("metadata"), scores=ChunkScores(bm25=float(score))))
        return out


def extract(question: str, chunks: list[ContextChunk]) -> tuple[str, list[Citation]]:
    q = {w.lower() for w in _WORD.findall(question) if len(w) > 2}
    best: tuple[int, str, str] | None = None
    for chunk in chunks[:3]:
        for sentence in _SENTENCE.split(chunk.text):
            overlap = len(q & {w.lower() for w in _WORD.findall(sentence)})
            if overlap and (best is None or overlap > best[0]):
                best = (overlap, sentence.strip(), chunk.card_id)
    if best is None:
        return "I could not find this in the verified knowledge base.", []
    return best[1], [Citation(card_id=best[2], span=best[1])]


Publish = Callable[..., Awaitable[Any]]


def make_retrieve(index: LexicalIndex, publish: Publish, out_topic: str):
    async def retrieve(env: Envelope[ChatRequested], delivery: Delivery) -> None:
        r = env.payload
        result = RetrievalCompleted(request_id=r.request_id, question=r.question, top_k=r.top_k,
                                    chunks=index.search(r.question, r.top_k), reply_to=r.reply_to)
        await publish(out_topic, result, key=r.request_id, correlation_id=env.correlation_id,
                      causation_id=str(env.event_id), event_id=derived_id("retrieval", env.event_id))
    return retrieve


def make_answer(publish: Publish, out_topic: str):
    async def answer(env: Envelope[RetrievalCompleted], delivery: Delivery) -> None:
        r = env.payload
        text, citations = extract(r.question, r.chunks)
        reply = ChatAnswered(request_id=r.request_id, question=r.question, answer=text,
                             citations=citations, generator="skeleton-extractive-v0",
                             status=AnswerStatus.ANSWERED if citations else AnswerStatus.NO_CONTEXT,
                             reply_to=r.reply_to)
        await publish(out_topic, reply, key=r.request_id, correlation_id=env.correlation_id,
                      causation_id=str(env.event_id), event_id=derived_id("answer", env.event_id))
    return answer


class ReplyRouter:
    """The gateway's request/reply: one future per request id, completed by the reply."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[ChatAnswered]] = {}

    def expect(self, rid: str) -> asyncio.Future[ChatAnswered]:
        fut = asyncio.get_running_loop().create_future()
        self.waiting[rid] = fut
        return fut

    async def on_reply(self, env: Envelope[ChatAnswered], delivery: Delivery) -> None:
        fut = self.waiting.pop(env.payload.request_id, None)
        if fut is not None and not fut.done():
            fut.set_result(env.payload)


# -- the two transports ------------------------------------------------------------------------


class Chain:
    """Topic names plus an ``ask`` that makes one request and waits for its reply."""

    def __init__(self, requested: str, completed: str, answered: str) -> None:
        self.requested, self.completed, self.answered = requested, completed, answered
        self.router = ReplyRouter()
        self.gateway_publish: Publish | None = None

    async def ask(self, question: str, timeout: float = 30.0) -> ChatAnswered:
        rid = uuid.uuid4().hex
        fut = self.router.expect(rid)
        assert self.gateway_publish is not None
        await self.gateway_publish(self.requested, ChatRequested(request_id=rid, question=question,
                                                                 reply_to="bench"),
                                   key=rid, correlation_id=rid)
        return await asyncio.wait_for(fut, timeout)


class InProcess:
    """Same handlers, called directly: envelopes built by Messaging.envelope, no bytes."""

    def __init__(self, chain: Chain, index: LexicalIndex) -> None:
        self.envelopes = Messaging("127.0.0.1:1", producer="bench-inprocess")  # never started
        self.handlers = {
            chain.requested: make_retrieve(index, self.publish, chain.completed),
            chain.completed: make_answer(self.publish, chain.answered),
            chain.answered: chain.router.on_reply,
        }
        chain.gateway_publish = self.publish

    async def publish(self, topic_name: str, payload: Any, *, key: str, correlation_id: str,
                      causation_id: str | None = None, event_id: uuid.UUID | None = None) -> None:
        env = self.envelopes.envelope(topic_name, payload, correlation_id=correlation_id,
                                      causation_id=causation_id, event_id=event_id)
        await self.handlers[topic_name](env, Delivery(topic_name, 0, 0, key.encode(), b""))


def stage(name: str, chain: Chain, index: LexicalIndex | None, bootstrap: str, run: str,
          fetch_max_wait_ms: int, linger_ms: int, concurrency: int) -> tuple[Messaging, GroupConsumer]:
    """One stage's Messaging and consumer, wired the same way in either layout: ``retrieval``
    (chat.requested -> retrieval.completed) or ``answer`` (retrieval.completed -> chat.answered)."""
    m = Messaging(bootstrap, producer=f"bench-{name}", linger_ms=linger_ms,
                  fetch_max_wait_ms=fetch_max_wait_ms, consumer_concurrency=concurrency)
    if name == "retrieval":
        assert index is not None
        return m, m.consume(chain.requested, group_id=f"bench-{run}-retrieval",
                            handler=make_retrieve(index, m.publish, chain.completed))
    return m, m.consume(chain.completed, group_id=f"bench-{run}-answer",
                        handler=make_answer(m.publish, chain.answered))


class StageProcess:
    """A stage in its own OS process: this script run with ``--stage``. It prints ``ready`` once
    its consumer owns its partitions and stops (commits, leaves its group) at SIGTERM."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process) -> None:
        self.name, self.proc = name, proc
        self.ps = psutil.Process(proc.pid)
        self._drain: asyncio.Task[None] | None = None

    @classmethod
    async def spawn(cls, name: str, argv: list[str]) -> StageProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, os.path.abspath(__file__), "--stage", name, *argv,
            stdout=asyncio.subprocess.PIPE)
        self = cls(name, proc)
        assert proc.stdout is not None
        try:
            async with asyncio.timeout(120):
                while (line := await proc.stdout.readline()) != b"ready\n":
                    if not line:
                        raise RuntimeError(f"stage {name} exited before it was ready")
                    sys.stderr.write(line.decode(errors="replace"))
        except BaseException:
            proc.kill()
            await proc.wait()
            raise
        self._drain = asyncio.create_task(self._forward(proc.stdout))  # a full pipe would block it
        return self

    @staticmethod
    async def _forward(stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            sys.stderr.write(line.decode(errors="replace"))

    def cpu_s(self) -> float:
        times = self.ps.cpu_times()
        return times.user + times.system

    async def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(60):
                code = await self.proc.wait()
        except TimeoutError:
            self.proc.kill()
            code = await self.proc.wait()
        if self._drain is not None:
            await self._drain
        if code != 0:
            raise RuntimeError(f"stage {self.name} exited with {code}")


def broker_process(bootstrap: str) -> psutil.Process | None:
    """The local process listening on the first bootstrap address's port (the broker JVM), so
    its CPU per request is counted too; None when it is not visible from here."""
    port = int(bootstrap.split(",")[0].rsplit(":", 1)[1])
    with contextlib.suppress(psutil.Error, OSError):
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                return psutil.Process(conn.pid)
    return None


async def run_stage(args: argparse.Namespace) -> None:
    """``--stage NAME``: run one stage until SIGTERM (started by ``OverKafka`` in ``processes``)."""
    chain = register_private_topics(args.run, args.label)
    index = LexicalIndex(load_cards()) if args.stage == "retrieval" else None
    m, sub = stage(args.stage, chain, index, args.bootstrap, f"{args.run}-{args.label}",
                   args.fetch_max_wait_ms[0], args.linger_ms, args.concurrency[0])
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await m.start()
    try:
        await m.wait_assigned(sub, timeout_s=60)
        print("ready", flush=True)
        await stop.wait()
    finally:
        await m.stop()


class OverKafka:
    def __init__(self, chain: Chain, index: LexicalIndex, bootstrap: str, run: str, label: str,
                 fetch_max_wait_ms: int, linger_ms: int, concurrency: int, processes: bool) -> None:
        self.gateway = Messaging(bootstrap, producer="bench-gateway", linger_ms=linger_ms,
                                 fetch_max_wait_ms=fetch_max_wait_ms, consumer_concurrency=concurrency)
        self.subscribers = [(self.gateway, self.gateway.consume(
            chain.answered, group_id=f"bench-{run}-{label}-gateway-{fetch_max_wait_ms}",
            handler=chain.router.on_reply, auto_offset_reset="latest"))]
        self.stage_argv: list[str] = []
        self.stages: list[StageProcess] = []
        if processes:
            self.stage_argv = ["--run", run, "--label", label, "--bootstrap", bootstrap,
                               "--fetch-max-wait-ms", str(fetch_max_wait_ms),
                               "--linger-ms", str(linger_ms), "--concurrency", str(concurrency)]
        else:
            self.subscribers += [
                stage(name, chain, index, bootstrap, f"{run}-{label}", fetch_max_wait_ms,
                      linger_ms, concurrency) for name in ("retrieval", "answer")]
        chain.gateway_publish = self.gateway.publish
        self.broker = broker_process(bootstrap)

    async def start(self) -> None:
        if self.stage_argv:
            self.stages = list(await asyncio.gather(
                *(StageProcess.spawn(name, self.stage_argv) for name in ("retrieval", "answer"))))
        for m, _ in self.subscribers:
            await m.start()
        for m, sub in self.subscribers:
            await m.wait_assigned(sub, timeout_s=60)

    def cpu_s(self) -> dict[str, float]:
        """CPU seconds so far of this process, of each stage process and of the broker."""
        cpu = {"this process": time.process_time(), **{s.name: s.cpu_s() for s in self.stages}}
        if self.broker is not None:
            with contextlib.suppress(psutil.Error):
                times = self.broker.cpu_times()
                cpu["broker (all its clients)"] = times.user + times.system
        return cpu

    async def stop(self) -> None:
        for m, _ in self.subscribers:
            await m.stop()
        await asyncio.gather(*(s.stop() for s in self.stages))


# -- measuring -----------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))  # nearest rank
    return ordered[rank]


class Timings:
    """Wall time of every awaited broker round trip on the Kafka path (publish until acked,
    offset commit), by wrapping Messaging.publish_envelope and AIOKafkaConsumer.commit.
    The in-process path never calls either."""

    def __init__(self) -> None:
        self.publish: list[float] = []
        self.commit: list[float] = []

    def install(self) -> None:
        from aiokafka import AIOKafkaConsumer

        def timed(cls: type, attr: str, sink: list[float]) -> None:
            original = getattr(cls, attr)

            async def wrapper(*a: Any, **k: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return await original(*a, **k)
                finally:
                    sink.append((time.perf_counter() - t0) * 1000)

            setattr(cls, attr, wrapper)

        timed(Messaging, "publish_envelope", self.publish)  # encode, send, wait for the ack
        timed(AIOKafkaConsumer, "commit", self.commit)

    def reset(self) -> None:
        self.publish.clear()
        self.commit.clear()


async def interleaved(a: Chain, b: Chain, questions: list[str], n: int) -> tuple[list[float], list[float]]:
    """n sequential requests on each chain, alternating, so both see the same machine load."""
    out_a, out_b = [], []
    for i in range(n):
        q = questions[i % len(questions)]
        for chain, out in ((a, out_a), (b, out_b)):
            t0 = time.perf_counter()
            reply = await chain.ask(q)
            out.append((time.perf_counter() - t0) * 1000)
            assert reply.request_id
    return out_a, out_b


CpuClock = Callable[[], dict[str, float]]


def this_process_cpu() -> dict[str, float]:
    return {"this process": time.process_time()}


async def concurrent(chain: Chain, questions: list[str], clients: int, total: int,
                     cpu: CpuClock) -> tuple[float, list[float], dict[str, float]]:
    """Requests/s, latencies, and CPU ms per request of each process taking part."""
    counter = iter(range(total))
    latencies: list[float] = []

    async def client() -> None:
        for i in counter:
            t0 = time.perf_counter()
            await chain.ask(questions[i % len(questions)])
            latencies.append((time.perf_counter() - t0) * 1000)

    t0, cpu0 = time.perf_counter(), cpu()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed, cpu1 = time.perf_counter() - t0, cpu()
    return total / elapsed, latencies, {k: (cpu1[k] - cpu0[k]) * 1000 / total for k in cpu0}


def stats(ms: list[float]) -> str:
    if not ms:
        return "- | - | - | -"
    return (f"{percentile(ms, 50):.2f} | {percentile(ms, 90):.2f} | {percentile(ms, 99):.2f} | "
            f"{statistics.fmean(ms):.2f}")


def register_private_topics(run: str, label: str) -> Chain:
    """Private copies of the three chat topics (same contracts) for this run."""
    return Chain(*(alias_topic(base, f"bench-{run}-{label}")
                   for base in (CHAT_REQUESTED, RETRIEVAL_COMPLETED, CHAT_ANSWERED)))


@dataclasses.dataclass
class Result:
    label: str
    inproc_seq: list[float]
    kafka_seq: list[float]
    inproc_tput: float
    kafka_tput: float
    inproc_cpu_ms: float
    kafka_cpu_ms: dict[str, float]
    kafka_conc: list[float]
    publish_ms: list[float]
    commit_ms: list[float]


async def measure(args: argparse.Namespace, index: LexicalIndex, questions: list[str], run: str,
                  layout: str, wait_ms: int, concurrency: int, timings: Timings) -> Result:
    label = f"{layout}-w{wait_ms}c{concurrency}"
    local = register_private_topics(run, label + "-inproc")
    InProcess(local, index)
    remote = register_private_topics(run, label)
    names = [remote.requested, remote.completed, remote.answered]
    await Messaging(args.bootstrap, "bench-admin").ensure_topics(names, partitions=args.partitions)
    kafka = OverKafka(remote, index, args.bootstrap, run, label, wait_ms, args.linger_ms,
                      concurrency, processes=layout == "processes")
    try:
        await kafka.start()
        await interleaved(local, remote, questions, args.warmup)
        timings.reset()
        inproc_seq, kafka_seq = await interleaved(local, remote, questions, args.requests)
        publish_ms, commit_ms = list(timings.publish), list(timings.commit)
        inproc_tput, _, inproc_cpu = await concurrent(local, questions, args.clients,
                                                      args.concurrent_requests, this_process_cpu)
        kafka_tput, kafka_conc, kafka_cpu = await concurrent(
            remote, questions, args.clients, args.concurrent_requests, kafka.cpu_s)
    finally:
        await kafka.stop()
        await drop_topics(args.bootstrap, names)
    return Result(f"{layout}, fetch_max_wait_ms={wait_ms}, linger_ms={args.linger_ms}, consumer "
                  f"concurrency={concurrency}", inproc_seq, kafka_seq,
                  inproc_tput, kafka_tput, inproc_cpu["this process"], kafka_cpu, kafka_conc,
                  publish_ms, commit_ms)


async def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=500, help="sequential requests per transport")
    ap.add_argument("--clients", type=int, default=16, help="concurrent clients")
    ap.add_argument("--concurrent-requests", type=int, default=1600, help="requests shared by the clients")
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--partitions", type=int, default=3, help="partitions of the private topics")
    ap.add_argument("--layouts", nargs="+", choices=["one-process", "processes"],
                    default=["one-process", "processes"],
                    help="all stages in this process, and/or retrieval and answer in their own")
    ap.add_argument("--fetch-max-wait-ms", type=int, nargs="+", default=[500],
                    help="consumer fetch_max_wait_ms values to compare (Messaging default: 500)")
    ap.add_argument("--linger-ms", type=int, default=0, help="producer linger_ms (Messaging default: 0)")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 16],
                    help="consumer concurrency values to compare (ATTESTA_KAFKA_CONSUMER_CONCURRENCY)")
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092"))
    # Internal: what a stage process of the ``processes`` layout is started with.
    ap.add_argument("--stage", choices=["retrieval", "answer"], help=argparse.SUPPRESS)
    ap.add_argument("--run", help=argparse.SUPPRESS)
    ap.add_argument("--label", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.stage:
        await run_stage(args)
        return
    if max(args.requests, args.concurrent_requests, args.clients) > 20_000:
        ap.error("keep runs small on a shared machine")

    questions = [q["question"] for q in load_queries()]
    index = LexicalIndex(load_cards())
    run = uuid.uuid4().hex[:8]
    load = os.getloadavg()[0]
    print(f"# chat round trip, {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, "
          f"python {platform.python_version()}, {os.cpu_count()} cores, load average {load:.1f} "
          f"(shared machine: noisy), bootstrap {args.bootstrap}, run {run}")
    timings = Timings()
    timings.install()
    results = [await measure(args, index, questions, run, layout, w, c, timings)
               for layout in args.layouts for w in args.fetch_max_wait_ms for c in args.concurrency]
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")

    print(f"\n## {args.requests} sequential requests, in-process and Kafka alternating (ms)\n")
    print("| transport | p50 | p90 | p99 | mean |\n|---|---|---|---|---|")
    for r in results:
        print(f"| in-process (same handlers), beside {r.label} | {stats(r.inproc_seq)} |")
        print(f"| Kafka, {r.label} | {stats(r.kafka_seq)} |")
    print(f"\n## {args.clients} concurrent clients, {args.concurrent_requests} requests\n")
    print("| transport | requests/s | p50 ms | p99 ms | CPU ms per request, by process |\n"
          "|---|---|---|---|---|")
    for r in results:
        print(f"| in-process, beside {r.label} | {r.inproc_tput:.0f} | | | {r.inproc_cpu_ms:.2f} |")
        cpu = ", ".join(f"{k} {v:.2f}" for k, v in r.kafka_cpu_ms.items())
        if len(r.kafka_cpu_ms) > 1:
            cpu += f"; total {sum(r.kafka_cpu_ms.values()):.2f}"
        print(f"| Kafka, {r.label} | {r.kafka_tput:.0f} | {percentile(r.kafka_conc, 50):.2f} | "
              f"{percentile(r.kafka_conc, 99):.2f} | {cpu} |")
    print("\n## Broker round trips awaited in this process during the sequential Kafka requests (ms)\n")
    print("(one-process: all three hops; processes: the gateway's publish and commit only)\n")
    print("| awaited call | per request | p50 | p90 | p99 | mean |\n|---|---|---|---|---|---|")
    for r in results:
        for name, xs in (("publish (acks=all, idempotent)", r.publish_ms),
                         ("offset commit", r.commit_ms)):
            print(f"| {name}, {r.label} | {len(xs) / len(r.kafka_seq):.1f} | {stats(xs)} |")
    print("\n## Kafka vs in-process\n")
    for r in results:
        k50, b50 = percentile(r.kafka_seq, 50), percentile(r.inproc_seq, 50)
        verdict = "meets" if k50 - b50 <= 10 else "MISSES"
        print(f"- {r.label}: p50 {k50:.2f} ms vs {b50:.2f} ms in-process: Kafka adds "
              f"{k50 - b50:.2f} ms ({k50 / b50:.0f}x; {verdict} the <= 10 ms goal); p99 adds "
              f"{percentile(r.kafka_seq, 99) - percentile(r.inproc_seq, 99):.2f} ms; throughput "
              f"{r.kafka_tput:.0f}/s = {r.kafka_tput / r.inproc_tput:.2f}x in-process "
              f"({'meets' if r.kafka_tput >= 500 else 'MISSES'} the >= 500/s goal)")
    by_label = {r.label: r for r in results}
    for r in results:
        one = by_label.get(r.label.replace("processes,", "one-process,", 1))
        if r.label.startswith("processes,") and one is not None:
            print(f"- {r.label.split(', ', 1)[1]}: one process per stage gives {r.kafka_tput:.0f}/s "
                  f"vs {one.kafka_tput:.0f}/s with every stage in one process "
                  f"({r.kafka_tput / one.kafka_tput:.2f}x)")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
