"""Hybrid retrieval: dense (Chroma) + sparse (BM25) fused by RRF, reranked by the
cross-encoder when it is loaded and answers within its time budget; every result is labelled
with the path it took (seed 000, ADR-0022 as the seed describes it)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from attesta_contracts.chat import ChunkScores, ContextChunk, HybridPath, ScoredSentence
from attesta_kb.written_forms import join_spelled
from attesta_platform.logs import get_logger
from attesta_retrieval.adapters.sparse import SparseUnavailable
from attesta_retrieval.domain.fusion import RANK_PRIOR_WEIGHT, RRF_K, dedup_by_parent, rerank_order, rrf
from attesta_retrieval.domain.model import Card, Hit
from attesta_retrieval.domain.passages import rerank_passage, sentence_passage, sentences_to_rerank
from attesta_retrieval.domain.paths import decide_path
from attesta_retrieval.domain.language import ENGLISH
from attesta_retrieval.service_layer.evidence import SentenceEvidence
from attesta_retrieval.service_layer.indexing import KbIndex
from attesta_retrieval.service_layer.multilingual import MultilingualSide

log = get_logger("attesta.retrieval")


@dataclass(frozen=True)
class RetrievalConfig:
    rrf_k: int = RRF_K
    dense_candidates: int = 50  # chunks asked from Chroma (deduplicated to cards afterwards)
    sparse_candidates: int = 50  # cards asked from BM25
    rerank_candidates: int = 20  # top fused cards the cross-encoder scores
    rerank_budget_ms: float = 2000.0  # over this, the reranked order is dropped: rrf_only
    # Under a burst the one reranker thread is the queue every workspace waits in: when the
    # work already queued would take longer than this, the question skips the reranker
    # (rrf_only, labelled "reranker busy") instead of waiting behind it (0: never skip). Only
    # chats retrieved concurrently can queue here (consumer concurrency > 1).
    rerank_queue_ms: float = 300.0
    rank_prior_weight: float = RANK_PRIOR_WEIGHT  # 0: order by the cross-encoder alone
    # The answer's reader (issue #24): on the full path the cross-encoder also scores
    # (question, "title: sentence") pairs: every sentence of the best card, then the sentences
    # of the next cards closest in meaning, up to this many pairs in all (0: none).
    sentence_rerank_cards: int = 3
    sentence_rerank_pairs: int = 24
    # Questions in another language (issue #24): the reranker was trained on English pairs, yet
    # on dev it still lifts them (names match across languages): nDCG@10 pt 0.939 -> 0.972,
    # es 0.918 -> 1.000 after the multilingual dense side (docs/retrieval-quality.md).
    rerank_other_languages: bool = True


@dataclass
class RetrievalOutcome:
    chunks: list[ContextChunk]
    hybrid_path: HybridPath | None
    path_reason: str | None
    timings_ms: dict[str, float] = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)  # all ranked candidates (benchmarks)
    language: str | None = None  # the question's, when a multilingual side is configured


class CrossEncoderModel(Protocol):
    """What the slot runs (``adapters.reranker.Reranker``): one raw logit per passage."""

    def logits(self, question: str, passages: list[str]) -> NDArray[np.float32]: ...


class RerankerSlot:
    """The loaded reranker, or why there is none. A single worker thread runs it, so a
    forward pass that overran its budget (torch cannot be interrupted) delays the next
    one instead of piling up. It knows how much work is queued (passes waiting or running,
    times a moving average of one pass) so that callers can skip it under a burst."""

    PASS_SMOOTHING = 0.2  # weight of the newest pass in the moving average

    def __init__(self) -> None:
        self.model: CrossEncoderModel | None = None
        self.why_not: str | None = "reranker loading"
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rerank")
        self._lock = threading.Lock()
        self._queued = 0
        self._pass_ms: float | None = None  # unknown until a pass has run

    def set(self, model: CrossEncoderModel) -> None:
        self.model, self.why_not = model, None

    def unset(self, reason: str) -> None:
        self.model, self.why_not = None, reason

    def queued_ms(self) -> float:
        """Expected time until a pass submitted now would start (0 while none has run)."""
        with self._lock:
            return self._queued * (self._pass_ms or 0.0)

    def submit(self, question: str,
               passages: list[str]) -> concurrent.futures.Future[NDArray[np.float32]]:
        model = self.model
        if model is None:  # callers check first; the slot can be emptied in between
            raise RuntimeError(f"no reranker loaded: {self.why_not}")
        with self._lock:
            self._queued += 1
        future = self._pool.submit(self._timed, model, question, passages)
        # Runs on cancel too: a caller over its budget cancels (through asyncio.wrap_future) a
        # pass that has not started, so it neither runs nor counts as queued.
        future.add_done_callback(self._done)
        return future

    def _timed(self, model: CrossEncoderModel, question: str,
               passages: list[str]) -> NDArray[np.float32]:
        started = time.perf_counter()
        try:
            return model.logits(question, passages)
        finally:
            ms = (time.perf_counter() - started) * 1000
            with self._lock:
                self._pass_ms = ms if self._pass_ms is None else (
                    self.PASS_SMOOTHING * ms + (1 - self.PASS_SMOOTHING) * self._pass_ms)

    def _done(self, _future: concurrent.futures.Future[NDArray[np.float32]]) -> None:
        with self._lock:
            self._queued -= 1


class _Laps:
    """The stage timings of one question in ms, in the order the stages ran (``timings_ms``)."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.started = self.last = time.perf_counter()

    def restart(self) -> None:
        """The next lap starts now (what ran since the last one is no stage's)."""
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round((now - self.last) * 1000, 3)
        self.last = now

    def total(self) -> dict[str, float]:
        self.timings["total"] = round((time.perf_counter() - self.started) * 1000, 3)
        return self.timings


class HybridRetriever:
    def __init__(self, index: KbIndex, reranker: RerankerSlot,
                 config: RetrievalConfig | None = None,
                 evidence: SentenceEvidence | None = None,
                 multilingual: MultilingualSide | None = None) -> None:
        self.index = index
        self.reranker = reranker
        self.config = config or RetrievalConfig()
        self.evidence = evidence  # per-sentence similarity for the answer
        self.multilingual = multilingual  # the dense side for other languages (issue #24)

    async def retrieve(self, question: str, top_k: int, *,
                       force_path: HybridPath | None = None) -> RetrievalOutcome:
        """``force_path`` (benchmarks only) stops at a given stage: dense_only or rrf_only.
        The stages: the dense side (English or multilingual), the sparse side, their fusion,
        the reranker when it may run, then the top cards with their sentences scored."""
        laps = _Laps()
        if not question.strip():
            d = decide_path(ran=False, sparse_ok=False, reranked=False,
                            why_not="question is blank: no retrieval ran")
            return RetrievalOutcome([], d.path, d.reason, {"total": 0.0})
        # A name spelled letter by letter ("V-E-L-N-O-R-E-X") is read whole by the embedders and
        # the reranker, which see only single letters otherwise; the sparse side adds it itself.
        read = join_spelled(question)
        # Until the multilingual side is warm, no language is reported: the question is served,
        # and its answer judged, the English way (the answer's gate reads the language).
        side = self.multilingual if self.multilingual is not None and self.multilingual.ready else None
        language = side.language(question) if side is not None else None
        foreign = side if side is not None and language != ENGLISH else None  # serves other languages
        vector, dense = await self._dense_side(read, foreign, laps)
        sparse, why_not = self._sparse_side(question, force_path)
        laps.lap("sparse")
        sparse_ok, reranked = why_not is None, False
        hits = self._known_hits(dense, sparse)
        if not sparse_ok:
            ranked = [hits[cid] for cid, _ in dense if cid in hits]
        else:
            ranked = self._fused(hits, dense, sparse)
            laps.lap("fuse")
            reranked, why_not = await self._rerank_if_allowed(
                read, ranked, force_path, language if foreign is not None else None, laps)
        decision = decide_path(ran=True, sparse_ok=sparse_ok, reranked=reranked, why_not=why_not)
        if reranked:
            ranked = self._reranked_order(ranked)
        chunks = await self._top_chunks(ranked[:top_k], read, vector, foreign, reranked, laps)
        return RetrievalOutcome(chunks, decision.path, decision.reason, laps.total(), ranked, language)

    async def _dense_side(self, read: str, foreign: MultilingualSide | None,
                          laps: _Laps) -> tuple[NDArray[np.float32], list[tuple[str, float]]]:
        """The question's vector and the dense candidates, one per card: from the multilingual
        side for a question in another language, else from the index's English embedder."""
        cfg = self.config
        if foreign is not None:
            vector = await asyncio.to_thread(foreign.query_vector, read)
            laps.lap("embed")
            dense = await asyncio.to_thread(foreign.dense, vector, cfg.dense_candidates)
        else:
            vector = (await asyncio.to_thread(self.index.embedder.embed, [read]))[0]
            laps.lap("embed")
            dense_chunks = await asyncio.to_thread(self.index.dense.query, vector, cfg.dense_candidates)
            dense = dedup_by_parent(dense_chunks)
        laps.lap("dense")
        return vector, dense

    def _sparse_side(self, question: str,
                     force_path: HybridPath | None) -> tuple[list[tuple[str, float]], str | None]:
        """The BM25 candidates, and why there are none when the sparse side did not run (None
        when it did): the query goes on dense_only then."""
        if force_path is HybridPath.DENSE_ONLY:
            return [], "dense_only requested"
        try:
            return self.index.sparse.search(question, self.config.sparse_candidates), None
        except SparseUnavailable as exc:
            return [], f"sparse index unavailable: {exc}"
        except Exception as exc:  # noqa: BLE001 - a broken sparse side must not fail the query
            log.error("sparse search failed", error=repr(exc))
            return [], f"sparse search failed: {type(exc).__name__}: {exc}"

    def _known_hits(self, dense: list[tuple[str, float]],
                    sparse: list[tuple[str, float]]) -> dict[str, Hit]:
        """One hit per card either side found, with each side's score."""
        hits: dict[str, Hit] = {}
        for card_id, score in dense:
            hits.setdefault(card_id, Hit(card_id)).dense = score
        for card_id, score in sparse:
            hits.setdefault(card_id, Hit(card_id)).bm25 = score
        # A card deleted after the sparse index was built can still be named by it: drop it.
        return {cid: h for cid, h in hits.items() if self.index.get(cid) is not None}

    def _fused(self, hits: dict[str, Hit], dense: list[tuple[str, float]],
               sparse: list[tuple[str, float]]) -> list[Hit]:
        """The hits in RRF order of the two sides' rankings, each with its fused score."""
        fused = rrf([[c for c, _ in dense if c in hits], [c for c, _ in sparse if c in hits]],
                    k=self.config.rrf_k)
        for card_id, score in fused:
            hits[card_id].rrf = score
        return [hits[c] for c, _ in fused]

    async def _rerank_if_allowed(self, read: str, ranked: list[Hit], force_path: HybridPath | None,
                                 other_language: str | None,
                                 laps: _Laps) -> tuple[bool, str | None]:
        """Whether the fused head was reranked, and why not when it was not (the path's label)."""
        if force_path is HybridPath.RRF_ONLY:
            return False, "rrf_only requested"
        if other_language is not None and not self.config.rerank_other_languages:
            return False, f"question in {other_language}: the reranker reads English only"
        if self.reranker.model is None:
            return False, f"reranker not loaded: {self.reranker.why_not}"
        if self._reranker_busy():
            return False, f"reranker busy: ~{self.reranker.queued_ms():.0f} ms of work queued"
        if not ranked:
            return True, None  # nothing to rerank: the full path ran on an empty candidate set
        return await self._rerank(read, ranked, laps.timings)

    def _reranked_order(self, ranked: list[Hit]) -> list[Hit]:
        """The reranked head in the cross-encoder's order (with the fused rank as a prior),
        then the rest of the fused order."""
        cfg = self.config
        head = ranked[:cfg.rerank_candidates]
        order = rerank_order([h.rerank_logit for h in head], cfg.rank_prior_weight)
        return [head[i] for i in order] + ranked[cfg.rerank_candidates:]

    async def _top_chunks(self, top_hits: list[Hit], read: str, vector: NDArray[np.float32],
                          foreign: MultilingualSide | None, reranked: bool,
                          laps: _Laps) -> list[ContextChunk]:
        """The returned cards, each with its sentences scored for the answer's reader: by meaning
        (the side that served the question), and on the full path by the cross-encoder too."""
        top = [(h, self._card(h.card_id)) for h in top_hits]
        chunks = [self._chunk(h, card) for h, card in top]
        evidence = foreign.evidence if foreign is not None else self.evidence
        if evidence is None or not chunks:
            return chunks
        laps.restart()
        scored = await asyncio.to_thread(evidence.score, vector, [c for _, c in top])
        for chunk, sents in zip(chunks, scored, strict=True):
            chunk.sentences = [ScoredSentence(text=s, similarity=round(v, 4)) for s, v in sents]
        laps.lap("evidence")
        # English pairs only: on a question in another language the English-trained
        # cross-encoder's sentence scores misled the reader on dev (the similarity leads).
        if reranked and self.config.sentence_rerank_pairs > 0 and foreign is None:
            laps.restart()
            await self._rerank_sentences(read, chunks)
            laps.lap("sentence_rerank")
        return chunks

    async def _rerank(self, question: str, ranked: list[Hit],
                      timings: dict[str, float]) -> tuple[bool, str | None]:
        cfg = self.config
        head = ranked[:cfg.rerank_candidates]
        passages = []
        for h in head:
            card = self.index.get(h.card_id)
            passages.append(rerank_passage(question, card.title, card.text) if card else "")
        started = time.perf_counter()
        future = self.reranker.submit(question, passages)
        try:
            logits = await asyncio.wait_for(asyncio.wrap_future(future), cfg.rerank_budget_ms / 1000)
        except TimeoutError:
            timings["rerank"] = round((time.perf_counter() - started) * 1000, 3)
            log.warning("reranker over its time budget: rrf_only", budget_ms=cfg.rerank_budget_ms)
            return False, f"reranker over its time budget ({cfg.rerank_budget_ms:g} ms)"
        except Exception as exc:  # noqa: BLE001 - a failing reranker degrades to rrf_only
            log.error("reranker failed", error=repr(exc))
            return False, f"reranker failed: {type(exc).__name__}: {exc}"
        timings["rerank"] = round((time.perf_counter() - started) * 1000, 3)
        for h, logit in zip(head, logits, strict=True):
            h.rerank_logit = float(logit)
        return True, None

    async def _rerank_sentences(self, question: str, chunks: list[ContextChunk]) -> None:
        """The cross-encoder's logit on the sentences ``sentences_to_rerank`` picks, set on
        them in place; on a failure or over the budget the sentences keep their similarity
        only (the answer's reader then goes by similarity)."""
        cfg = self.config
        picked = sentences_to_rerank([[s.similarity for s in c.sentences or ()] for c in chunks],
                                     cfg.sentence_rerank_cards, cfg.sentence_rerank_pairs)
        if not picked or self.reranker.model is None or self._reranker_busy():
            return
        passages = [sentence_passage(chunks[ci].title, (chunks[ci].sentences or [])[si].text)
                    for ci, si in picked]
        try:
            future = self.reranker.submit(question, passages)
            logits = await asyncio.wait_for(asyncio.wrap_future(future), cfg.rerank_budget_ms / 1000)
        except TimeoutError:
            log.warning("sentence rerank over its time budget: similarity only",
                        budget_ms=cfg.rerank_budget_ms)
            return
        except Exception as exc:  # noqa: BLE001 - the reader falls back to similarity
            log.error("sentence rerank failed", error=repr(exc))
            return
        for (ci, si), logit in zip(picked, logits, strict=True):
            sentence = (chunks[ci].sentences or [])[si]
            sentence.relevance_logit = round(float(logit), 4)

    def _reranker_busy(self) -> bool:
        limit = self.config.rerank_queue_ms
        return limit > 0 and self.reranker.queued_ms() > limit

    def _card(self, card_id: str) -> Card:
        card = self.index.get(card_id)
        assert card is not None  # ranked hits were filtered to cards the index has
        return card

    def _chunk(self, h: Hit, card: Card) -> ContextChunk:
        return ContextChunk(
            id=card.card_id, card_id=card.card_id, title=card.title, text=card.text,
            source=card.source, metadata=card.metadata,
            scores=ChunkScores(dense=h.dense, bm25=h.bm25, rrf=h.rrf, rerank_logit=h.rerank_logit),
        )
