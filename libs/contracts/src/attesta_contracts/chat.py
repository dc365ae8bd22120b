from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_serializer,
)
from pydantic_core import PydanticCustomError

from attesta_contracts.runs import PromptContext

QUESTION_MAX_CHARS = 2000


def _refuse_nul(text: str) -> str:
    # PostgreSQL text cannot hold U+0000: a question with one would become a run nobody can
    # store. Refused with a reason where people ask (422), like every other body.
    if "\x00" in text:
        raise PydanticCustomError("nul_character", "text must not contain a NUL character (U+0000)")
    return text


# A question as a person asks it (the gateway's chat body): 1-2000 characters, no NUL.
Question = Annotated[str, StringConstraints(min_length=1, max_length=QUESTION_MAX_CHARS),
                     AfterValidator(_refuse_nul)]


def _drop_when_unset(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Additive optional fields stay *absent* from the JSON when unset (never null), so an
    event built without them serializes byte for byte as before they existed. The models' wrap
    serializers that call it stay unannotated: a return annotation would become the model's
    serialization schema (the OpenAPI document's Citation lost its fields when it was typed)."""
    for key in keys:
        if data.get(key) is None:
            data.pop(key, None)
    return data


class HybridPath(StrEnum):
    """Which retrieval path produced the context (ADR-0022 as seed 000 describes it).
    An absent label (``None``) means no retrieval ran."""

    FULL = "full"  # dense + sparse fused by RRF, then cross-encoder rerank
    RRF_ONLY = "rrf_only"  # fused, no reranker (not loaded, RAM-constrained, timed out)
    DENSE_ONLY = "dense_only"  # sparse side unavailable


class ChatRequested(BaseModel):
    request_id: str = Field(min_length=1, max_length=100)
    question: str = Field(min_length=1, max_length=QUESTION_MAX_CHARS)
    top_k: int = Field(default=5, ge=1, le=20)
    # The gateway instance that holds the HTTP caller (informational; every instance reads replies).
    reply_to: str | None = None
    workspace_id: str | None = None
    # Additive (issue #12): set by the collector when it asks our assistant a prompt of its
    # own; retrieval passes it on and the answer service copies it onto the run it records,
    # so the run splits by prompt tag like the runs the collector records itself.
    prompt_context: PromptContext | None = None
    # Additive (issue #23): when the caller stops waiting (the gateway: now + its chat timeout).
    # Retrieval and the answer service skip a request read after it; absent: no deadline.
    deadline: AwareDatetime | None = None

    @model_serializer(mode="wrap")
    def _drop_unset_context(self, handler):  # type: ignore[no-untyped-def]
        return _drop_when_unset(handler(self), ("prompt_context", "deadline"))


class ChunkScores(BaseModel):
    dense: float | None = None  # cosine similarity
    bm25: float | None = None
    rrf: float | None = None
    rerank_logit: float | None = None  # raw cross-encoder logit, only on the full path


class ScoredSentence(BaseModel):
    """A sentence of the chunk's text, verbatim, with its cosine similarity to the question
    (retrieval's embedder): the answer service's evidence for whether and where the context
    answers the question."""

    text: str
    similarity: float
    # Additive (issue #24): the cross-encoder's raw logit for (question, "card title: sentence"),
    # for the sentences retrieval scored with it (the full path only); absent otherwise.
    relevance_logit: float | None = None

    @model_serializer(mode="wrap")
    def _drop_unset_logit(self, handler):  # type: ignore[no-untyped-def]
        return _drop_when_unset(handler(self), ("relevance_logit",))


class ContextChunk(BaseModel):
    """One retrieved card. After dedup by parent, ``id`` == parent id == ``card_id``.
    ``source``/``metadata`` are passed through unvalidated from the KB; enrichment guards them."""

    id: str
    card_id: str
    title: str = ""
    text: str
    source: Any = None
    metadata: Any = None
    scores: ChunkScores = Field(default_factory=ChunkScores)
    # Additive (issue #14): absent from retrievals that computed no sentence evidence.
    sentences: list[ScoredSentence] | None = None


class RetrievalCompleted(BaseModel):
    request_id: str
    question: str
    top_k: int = 5
    chunks: list[ContextChunk] = Field(default_factory=list)
    hybrid_path: HybridPath | None = None
    # Why a fallback path was taken (e.g. "reranker timed out after 250 ms"); None on full.
    path_reason: str | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)
    reply_to: str | None = None
    workspace_id: str | None = None
    prompt_context: PromptContext | None = None  # ChatRequested's, passed on unchanged
    deadline: AwareDatetime | None = None  # ChatRequested's, passed on unchanged
    # Additive (issue #24): the question's language as retrieval detected it (ISO 639-1, e.g.
    # "en", "pt", "es"); absent when retrieval did not detect one.
    language: str | None = Field(default=None, max_length=8)

    @model_serializer(mode="wrap")
    def _drop_unset_context(self, handler):  # type: ignore[no-untyped-def]
        return _drop_when_unset(handler(self), ("prompt_context", "deadline", "language"))


_ENRICHED = ("source_url", "source_license", "retrieved_score")


class Citation(BaseModel):
    """A citation at card granularity (ADR-0019) with the three additive optional fields of
    ADR-0024. Each optional field is *absent* from the JSON when unset, never null, so a citation
    built from a card id alone serializes exactly as before enrichment existed."""

    model_config = ConfigDict(extra="ignore")

    card_id: str = Field(min_length=1)
    span: str = ""
    source_url: str | None = None
    source_license: str | None = None
    retrieved_score: float | None = Field(default=None, ge=0, le=100)

    @model_serializer(mode="wrap")
    def _drop_unset_enrichment(self, handler):  # type: ignore[no-untyped-def]
        return _drop_when_unset(handler(self), _ENRICHED)


class AnswerStatus(StrEnum):
    ANSWERED = "answered"
    NO_CONTEXT = "no_context"  # nothing relevant was retrieved; the answer says so, cites nothing
    FAILED = "failed"  # the generator failed after bounded retries; ``error`` says why


class ChatAnswered(BaseModel):
    request_id: str
    question: str
    answer: str
    citations: list[Citation] = Field(default_factory=list)
    status: AnswerStatus = AnswerStatus.ANSWERED
    error: str | None = None
    hybrid_path: HybridPath | None = None
    generator: str = ""  # e.g. "offline-extractive-v1" or the LLM model name
    run_id: str | None = None
    answer_sha256: str | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)
    reply_to: str | None = None
