"""Share of the end-to-end chat time that citation enrichment takes (goal: < 1%).

    . .state/env && .venv/bin/python benchmarks/answer_e2e.py [--requests 100]

An in-process pipeline over the REAL Kafka broker (KAFKA_BOOTSTRAP_SERVERS): for each labelled
question, one at a time,
  retrieval stand-in (BM25 over the shipped KB, top 5, in this process; logits 2.5, 1.5, ...,
  hybrid_path=full) -> publish retrieval.completed -> the answer service's own handler
  (``entrypoints.kafka.subscribe``, offline generator) -> chat.answered consumed here.
End-to-end time = from the start of retrieval to the reply being read back. Enrichment time is
what the handler itself measured (``timings_ms["answer.enrich"]`` in the reply).
The real system adds the gateway, one more Kafka hop and dense retrieval + reranking, so the
share measured here is an upper bound of the share in the running system.

Topics are per-run aliases of the real ones (deleted at the end), so nothing else on the
shared broker sees these messages.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid

import bm25s
from aiokafka import AIOKafkaConsumer

from attesta_answer.bootstrap import build_bus
from attesta_answer.domain.extractive import OfflineGenerator
from attesta_answer.entrypoints.kafka import subscribe
from attesta_contracts import Envelope
from attesta_contracts.chat import ChatAnswered, ChunkScores, ContextChunk, HybridPath, RetrievalCompleted
from attesta_contracts.topics import CHAT_ANSWERED, RETRIEVAL_COMPLETED, RUNS_RECORDED
from attesta_kb.dataset import load_cards, load_queries
from attesta_platform.messaging import Messaging
from attesta_testing.infra import AliasedPublisher, alias_topic, drop_topics, kafka_bootstrap


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args(argv)

    cards = load_cards()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([f"{c['title']} {c['text']}" for c in cards], stopwords="en",
                                   show_progress=False), show_progress=False)
    questions = [q["question"] for q in load_queries("dev")][: args.requests]

    bootstrap = kafka_bootstrap()
    # Private copies of the service's topics: the service publishes to them through an
    # AliasedPublisher with the same prefix, so the benchmark runs beside the real system.
    prefix = f"bench-answer-{uuid.uuid4().hex[:10]}"
    names = [alias_topic(t, prefix) for t in (RETRIEVAL_COMPLETED, CHAT_ANSWERED, RUNS_RECORDED)]
    retrieval_topic, answered_topic = names[0], names[1]
    messaging = Messaging(bootstrap, producer="answer")
    await messaging.ensure_topics(names, partitions=1)
    generator = OfflineGenerator()
    generator.warm_up()
    bus = build_bus(generator, publisher=AliasedPublisher(messaging, prefix),
                    default_workspace="bench")
    sub = subscribe(messaging, bus, topic=retrieval_topic,
                    group_id=f"bench-answer-{uuid.uuid4().hex[:8]}")
    reader = AIOKafkaConsumer(answered_topic, bootstrap_servers=bootstrap,
                              auto_offset_reset="earliest", enable_auto_commit=False)
    await messaging.start()
    await reader.start()
    e2e_ms, retrieval_ms, build_ms, enrich_ms, shares, citations = [], [], [], [], [], 0
    try:
        await messaging.wait_assigned(sub)
        for i, question in enumerate(["warm-up: what is the dose of Velnorex?", *questions]):
            started = time.perf_counter()
            ids, _ = retriever.retrieve(bm25s.tokenize([question], stopwords="en", show_progress=False),
                                        k=5, show_progress=False)
            chunks = [ContextChunk(id=cards[j]["card_id"], card_id=cards[j]["card_id"],
                                   title=cards[j]["title"], text=cards[j]["text"],
                                   source=cards[j]["source"], metadata=cards[j]["metadata"],
                                   scores=ChunkScores(rerank_logit=2.5 - rank))
                      for rank, j in enumerate(ids[0])]
            retrieved = time.perf_counter()
            rid = f"bench-{i}-{uuid.uuid4().hex[:6]}"
            await messaging.publish(retrieval_topic, RetrievalCompleted(
                request_id=rid, question=question, chunks=chunks, hybrid_path=HybridPath.FULL),
                key=rid, correlation_id=rid)
            reply = None
            while reply is None:
                for records in (await reader.getmany(timeout_ms=1000)).values():
                    for r in records:
                        env = Envelope[ChatAnswered].model_validate_json(r.value)
                        if env.payload.request_id == rid:
                            reply = env.payload
            done = time.perf_counter()
            if i == 0:
                continue  # first request pays connection and assignment costs
            total = (done - started) * 1000
            e2e_ms.append(total)
            retrieval_ms.append((retrieved - started) * 1000)
            build_ms.append(reply.timings_ms["answer.total"])
            enrich_ms.append(reply.timings_ms["answer.enrich"])
            shares.append(reply.timings_ms["answer.enrich"] / total)
            citations += len(reply.citations)
    finally:
        await reader.stop()
        await messaging.stop()
        await drop_topics(bootstrap, names)

    n = len(e2e_ms)
    print(f"requests: {n} sequential (dev questions), citations: {citations}, "
          f"python {sys.version.split()[0]}, kafka {bootstrap}")
    for label, values in (("end to end (retrieval stand-in + Kafka hop + answer + reply read)", e2e_ms),
                          ("  retrieval stand-in (BM25, in process)", retrieval_ms),
                          ("  answer building in the handler (answer.total)", build_ms),
                          ("  enrichment in the handler (answer.enrich)", enrich_ms)):
        print(f"{label}, ms: p50 {pct(values, 50):.3f}  p99 {pct(values, 99):.3f}  "
              f"mean {statistics.fmean(values):.3f}")
    print(f"enrichment share of end-to-end time: p50 {pct(shares, 50):.4%}  p99 {pct(shares, 99):.4%}  "
          f"overall {sum(enrich_ms) / sum(e2e_ms):.4%}  (goal < 1%)")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
