"""Wiring of the retrieval service (``attesta run retrieval``).

Start-up order: the health endpoint and the Kafka consumers come up at once; the models load
and the KB topic is replayed into the indexes in the background, with progress in the logs and
in ``/readyz``. A chat request read before the index is built waits for it (uncommitted).

The reranker is optional for readiness: without one the service answers on ``rrf_only`` (the
label and ``path_reason`` say so) and keeps looking for the folder every
``ATTESTA_RETRIEVAL_RERANKER_POLL_S``; a training that finishes while the service runs (a
fresh ``scripts/up.sh`` trains in the background) is loaded then, and the next question takes
the ``full`` path. The folder is written to a temporary name and renamed when complete, so a
half-written model is never loaded.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attesta_contracts.topics import CHAT_REQUESTED, DEAD_LETTERED, RETRIEVAL_COMPLETED
from attesta_platform import bus
from attesta_platform.consuming import GroupConsumer
from attesta_platform.logs import configure_logging, get_logger
from attesta_platform.messaging import Messaging
from attesta_platform.service import serve
from attesta_platform.settings import load_settings
from attesta_retrieval.adapters.metrics import RetrievalMetrics
from attesta_retrieval.entrypoints.chat import subscribe_chat
from attesta_retrieval.entrypoints.kb_ingest import KbIngest
from attesta_retrieval.service_layer.errors import NotReady
from attesta_retrieval.service_layer.handlers import HANDLERS
from attesta_retrieval.service_layer.indexing import CardEvent, KbIndex
from attesta_retrieval.service_layer.retrieval import (
    CrossEncoderModel,
    HybridRetriever,
    RerankerSlot,
    RetrievalConfig,
    RetrievalOutcome,
)
from attesta_retrieval.settings import RetrievalSettings

if TYPE_CHECKING:  # the models' modules are imported by the background start-up, not here
    from attesta_retrieval.service_layer.evidence import SentenceEvidence

NAME = "retrieval"
log = get_logger("attesta.retrieval")


async def _ready_now() -> None:
    """Nothing to wait for (a bus without a background start-up: tests)."""


def build_bus(**dependencies: Any) -> bus.MessageBus:
    """The retrieval service's bus, the handlers' dependencies by name (``retriever``,
    ``index``, ``publisher``, ``wait_ready``, ``metrics``, ``chat_max_age_s``); what a process
    does not use stays None (the KB ingest's tests give only ``index``). In the service,
    ``retriever`` and ``index`` are the ``Runtime``, which hands each message to what the
    background start-up built."""
    unused = dict.fromkeys(("retriever", "index", "publisher"))
    return bus.bootstrap(HANDLERS, **{**unused, "wait_ready": _ready_now,
                                      "metrics": RetrievalMetrics(), **dependencies})


def resolve_reranker_dir(settings: RetrievalSettings) -> Path:
    if settings.reranker_dir is not None:
        return settings.reranker_dir
    # The training module (its retriever, index and KB; torch only once training starts) loads
    # only when no folder is configured.
    from attesta_retrieval.service_layer.reranker_training import default_reranker_dir

    return default_reranker_dir()


def collection_name(embedder_name: str, settings: RetrievalSettings) -> str:
    """One collection per (embedder, chunking): changing either re-embeds into a new one
    instead of mixing vectors of two configurations."""
    key = f"{embedder_name}|{settings.retrieval_chunk_words}|{settings.retrieval_chunk_overlap_words}"
    return f"kb-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


class Runtime:
    """What the background start-up builds, and the readiness it reports. The bus, built
    before it, gets this as its ``retriever`` and ``index``: each call goes to what is built."""

    def __init__(self) -> None:
        self.status = "loading models"
        self.retriever: HybridRetriever | None = None
        self.index: KbIndex | None = None
        self.ingest: KbIngest | None = None
        self.reranker_slot: RerankerSlot | None = None
        self.ready = asyncio.Event()
        self.chat_subscriber: GroupConsumer | None = None
        self.failed: BaseException | None = None
        self.tasks: list[asyncio.Task[Any]] = []

    def watch(self, task: asyncio.Task[None]) -> asyncio.Task[None]:
        """A background task that dies stops the process (a clear exit beats a service that
        stays unready forever)."""
        def done(t: asyncio.Task[None]) -> None:
            if t.cancelled() or t.exception() is None:
                return
            self.failed = t.exception()
            log.error("retrieval start-up or ingest failed; stopping", error=repr(self.failed))
            os.kill(os.getpid(), signal.SIGTERM)

        task.add_done_callback(done)
        self.tasks.append(task)
        return task

    async def retrieve(self, question: str, top_k: int) -> RetrievalOutcome:
        # The chat handler waits for readiness first, and the retriever is set before it.
        if self.retriever is None:
            raise NotReady("retrieval is not ready: no retriever built yet")
        return await self.retriever.retrieve(question, top_k)

    def apply(self, events: list[CardEvent]) -> Any:
        # The KB ingest starts once the index is built.
        if self.index is None:
            raise NotReady("no KB index built yet")
        return self.index.apply(events)

    def ready_reason(self) -> str | None:
        if self.failed is not None:
            return f"start-up failed: {self.failed!r}"
        if self.ingest is not None and not self.ingest.replayed.is_set():
            done, total = self.ingest.progress
            return f"ingesting the KB topic: {done}/{total} records read"
        if not self.ready.is_set():
            return self.status
        sub = self.chat_subscriber
        if sub is None or sub.consumer is None or not sub.consumer.assignment():
            return "chat consumer has no partitions yet"
        return None


class RerankerLoader:
    """Puts the cross-encoder in the slot once its folder holds one, and keeps looking while it
    does not (a training that finishes while the service runs is picked up). A folder that
    failed to load is not tried again until it changes (its mtime)."""

    def __init__(self, slot: RerankerSlot, folder: Path, poll_s: float,
                 is_model_dir: Callable[[Path], bool],
                 open_model: Callable[[Path], CrossEncoderModel]) -> None:
        self.slot, self.folder, self.poll_s = slot, folder, poll_s
        self._is_model_dir, self._open_model = is_model_dir, open_model
        self._failed_mtime: float | None = None

    def load(self) -> None:
        slot, folder = self.slot, self.folder
        if not self._is_model_dir(folder):
            slot.unset(f"no CrossEncoder model at {folder} yet (`attesta retrieval "
                       "train-reranker` writes it; or set ATTESTA_RERANKER_DIR)")
        else:
            mtime = folder.stat().st_mtime
            if self._failed_mtime == mtime:
                return
            try:
                slot.set(self._open_model(folder))
            except Exception as exc:  # noqa: BLE001 - without a reranker we serve rrf_only
                self._failed_mtime = mtime
                slot.unset(f"loading {folder} failed: {exc!r}")
        log.info("reranker", loaded=slot.model is not None, reason=slot.why_not,
                 path="full" if slot.model is not None else "rrf_only")

    async def watch(self) -> None:
        while self.slot.model is None and self.poll_s > 0:
            await asyncio.sleep(self.poll_s)
            if self._is_model_dir(self.folder):
                await asyncio.to_thread(self.load)


def retrieval_config(settings: RetrievalSettings) -> RetrievalConfig:
    """The retriever's knobs as the service's settings give them."""
    return RetrievalConfig(
        rrf_k=settings.retrieval_rrf_k, dense_candidates=settings.retrieval_dense_candidates,
        sparse_candidates=settings.retrieval_sparse_candidates,
        rerank_candidates=settings.retrieval_rerank_candidates,
        rerank_budget_ms=settings.retrieval_rerank_budget_ms,
        rerank_queue_ms=settings.retrieval_rerank_queue_ms,
        rank_prior_weight=settings.retrieval_rank_prior_weight,
        rerank_other_languages=settings.retrieval_rerank_other_languages,
        sentence_rerank_pairs=settings.retrieval_sentence_rerank_pairs)


async def _open_index(settings: RetrievalSettings, rt: Runtime) -> KbIndex:
    """The embedder, the dense store (one collection per embedder and chunking) and the sparse
    index, as the KB index that the replayed KB topic fills."""
    # The models' modules (torch, sentence-transformers, Chroma) load here, in the background
    # start-up, not at import: the health endpoint and the consumers come up first.
    from attesta_retrieval.adapters.dense_store import DenseStore, make_client
    from attesta_retrieval.adapters.embedder import Embedder
    from attesta_retrieval.adapters.sparse import SparseIndex

    embedder = await asyncio.to_thread(Embedder, settings.retrieval_embedder_dir)
    rt.status = "opening the dense store"
    client = await asyncio.to_thread(
        make_client, None if settings.chroma_url else settings.chroma_dir, settings.chroma_url)
    dense = await asyncio.to_thread(DenseStore, client, collection_name(embedder.name, settings))
    sparse = SparseIndex(settings.sparse_dir, enabled=settings.retrieval_sparse_enabled)
    return await asyncio.to_thread(
        lambda: KbIndex(dense, embedder, sparse, settings.retrieval_chunk_words,
                        settings.retrieval_chunk_overlap_words))


async def build(settings: RetrievalSettings, messaging: Messaging, rt: Runtime,
                message_bus: bus.MessageBus, metrics: RetrievalMetrics) -> None:
    """The background start-up: the reranker loads while the index opens and the KB topic is
    replayed into it; ready once both are done (with or without a reranker), then the
    sentence and multilingual warm-ups run behind."""
    # The reranker's and the evidence's modules (torch, sentence-transformers) load here, in the
    # background start-up, not at import: the health endpoint and the consumers come up first.
    from attesta_retrieval.adapters.reranker import Reranker, is_cross_encoder_dir
    from attesta_retrieval.service_layer.evidence import SentenceEvidence

    slot = RerankerSlot()
    rt.reranker_slot = slot
    reranker = RerankerLoader(slot, resolve_reranker_dir(settings), settings.retrieval_reranker_poll_s,
                              is_cross_encoder_dir, Reranker)
    reranker_task = asyncio.create_task(asyncio.to_thread(reranker.load))
    index = await _open_index(settings, rt)
    rt.index = index
    rt.ingest = KbIngest(messaging, settings.retrieval_kb_topic, index, message_bus,
                         client_id=f"{NAME}-{settings.instance_id}",
                         max_records=settings.retrieval_ingest_batch)
    await rt.ingest.start()
    rt.watch(asyncio.create_task(rt.ingest.run()))
    rt.retriever = HybridRetriever(index, slot, retrieval_config(settings),
                                   evidence=SentenceEvidence(index.embedder))
    await rt.ingest.replayed.wait()
    rt.status = "loading the reranker"
    await reranker_task
    if slot.model is None:
        rt.tasks.append(asyncio.create_task(reranker.watch()))
    rt.ready.set()
    log.info("retrieval ready", cards=len(index.cards), reranker=slot.model is not None,
             sparse=index.sparse.unavailable_reason or "ok",
             chats_at_once=settings.kafka_consumer_concurrency)
    rt.tasks.append(asyncio.create_task(_warm_evidence(rt.retriever.evidence, index)))
    metrics.mark_multilingual(False)
    if settings.retrieval_multilingual:
        rt.tasks.append(asyncio.create_task(
            _warm_multilingual(rt.retriever, index, settings, metrics)))


async def _warm_evidence(evidence: SentenceEvidence | None, index: KbIndex) -> None:
    """Embed the KB's sentences in the background once ready, so answering does not pay for
    them on the first questions; a failure here only costs that latency."""
    if evidence is None:
        return
    try:
        cards = await asyncio.to_thread(lambda: list(index.cards.values()))
        n = await asyncio.to_thread(evidence.warm, cards)
        log.info("sentence evidence warmed", cards=n)
    except Exception as exc:  # noqa: BLE001 - evidence is computed on demand anyway
        log.warning("sentence evidence warm-up failed", error=repr(exc))


async def _warm_multilingual(retriever: HybridRetriever, index: KbIndex,
                             settings: RetrievalSettings, metrics: RetrievalMetrics) -> None:
    """Questions in other languages (issue #24): load the multilingual encoder and the language
    identifier, embed the cards and their sentences (kept on disk by text hash), then serve
    them; until then every question is served the English way. A failure here leaves it so."""
    # The multilingual encoder's modules load only when that side is switched on.
    from attesta_retrieval.adapters.multilingual import E5Encoder, LanguageIdentifier
    from attesta_retrieval.service_layer.multilingual import MultilingualSide

    try:
        side = await asyncio.to_thread(
            lambda: MultilingualSide(E5Encoder(settings.retrieval_multilingual_threads),
                                     LanguageIdentifier().classify,
                                     settings.cache_dir))
        retriever.multilingual = side
        cards = await asyncio.to_thread(lambda: list(index.cards.values()))
        await asyncio.to_thread(side.warm, cards)
        metrics.mark_multilingual(side.ready)
    except Exception as exc:  # noqa: BLE001 - English questions do not depend on it
        metrics.mark_multilingual(False)
        log.error("multilingual side failed: questions in other languages served the English way",
                  error=repr(exc))


async def _main() -> None:
    settings = load_settings(RetrievalSettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    messaging = Messaging.from_settings(settings, NAME)
    rt = Runtime()
    metrics = RetrievalMetrics()

    async def wait_ready() -> None:
        await rt.ready.wait()

    # Built once, before the models: the handlers reach them through the runtime.
    message_bus = build_bus(retriever=rt, index=rt, publisher=messaging, wait_ready=wait_ready,
                            chat_max_age_s=settings.retrieval_chat_max_age_s, metrics=metrics)
    rt.chat_subscriber = subscribe_chat(
        messaging, message_bus, group_id=settings.retrieval_chat_group,
        auto_offset_reset=settings.retrieval_chat_offset_reset)

    async def on_started() -> None:
        rt.watch(asyncio.create_task(build(settings, messaging, rt, message_bus, metrics)))

    async def on_stopping() -> None:
        for task in rt.tasks:
            task.cancel()
        await asyncio.gather(*rt.tasks, return_exceptions=True)
        if rt.ingest is not None:
            await rt.ingest.stop()

    await serve(NAME, messaging,
                [CHAT_REQUESTED, RETRIEVAL_COMPLETED, DEAD_LETTERED, settings.retrieval_kb_topic],
                settings.kafka_partitions, on_started, health_host=settings.health_host,
                health_port=settings.health_port, ready=rt.ready_reason, on_stopping=on_stopping)
    if rt.failed is not None:
        raise SystemExit(1)


def main() -> None:
    asyncio.run(_main())
