from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, Field

ASSISTANT_ENGINE = "attesta-assistant"

CollectionMethod = Literal["api", "api_with_search", "assistant"]
COLLECTION_METHODS: tuple[CollectionMethod, ...] = ("api", "api_with_search", "assistant")
MODEL_BUILD_MAX_LENGTH = 200  # the bound on each ModelBuild field; producers truncate to it


class RunRecorded(BaseModel):
    """A prompt put to an AI engine and its answer. The run's evidence is the answer's exact
    UTF-8 bytes; ``answer_sha256`` is their SHA-256."""

    run_id: str = Field(min_length=1, max_length=100)
    workspace_id: str = Field(min_length=1, max_length=100)
    engine: str = Field(min_length=1, max_length=100)
    model: str = Field(min_length=1, max_length=200)
    prompt: str = Field(min_length=1, max_length=20_000)
    answer: str = Field(max_length=200_000)
    answer_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    brand_ids: list[str] = Field(default_factory=list)  # empty: every brand of the workspace
    requested_at: AwareDatetime
    answered_at: AwareDatetime
    source: str = "external"  # "assistant" for our own chat answers, "collector" for collected
    # Additive, set by the collector (services/collector): the sources the answer cites, the
    # collection that produced it, the SHA-256 of the engine's raw response (stored by the
    # collector next to the answer), token usage and latency when the engine reported them.
    sources: list[RunSource] = Field(default_factory=list, max_length=500)
    collection_id: str | None = Field(default=None, max_length=100)
    raw_response_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    usage: EngineUsage | None = None
    latency_ms: float | None = Field(default=None, ge=0)
    # Additive (issue #12): the collector's prompt this run asked and its tags, so the
    # classifier's metrics can split by prompt tag without importing the collector.
    prompt_context: PromptContext | None = None
    # Additive (issue #25 item 4): how the answer was collected, declared by the engine. Plain
    # API answers, answers grounded in a web search and our own assistant's answers share almost
    # nothing, so metrics split by this and never average across it. None: recorded before the
    # field existed, or posted by hand.
    collection_method: CollectionMethod | None = None
    # Additive (issue #25 item 4): the model build the endpoint reported in its response, which
    # may differ from the requested ``model``; a change is marked on the charts.
    model_build: ModelBuild | None = None


class RunSource(BaseModel):
    """One source an answer cites: a URL or bare domain in its text, or a structured citation
    field the engine returned next to the text (``url_citation`` annotations, a ``citations``
    list). ``domain`` is the registered domain (eTLD+1, Public Suffix List)."""

    url: str = Field(min_length=1, max_length=4000)
    domain: str = Field(min_length=1, max_length=253)
    host: str | None = Field(default=None, max_length=253)  # normalized (IDNA ASCII) host
    position: int = Field(ge=0)  # order of first appearance among the run's sources
    origin: Literal["text", "annotation", "citations"] = "text"
    title: str | None = Field(default=None, max_length=1000)


class PromptContext(BaseModel):
    """The collector's prompt behind a collected run: its id and tags (topic, persona, funnel
    stage). Absent on runs that did not come from a collector prompt."""

    prompt_id: str = Field(min_length=1, max_length=100)
    prompt_set: str | None = Field(default=None, max_length=100)
    topic: str | None = Field(default=None, max_length=100)
    persona: str | None = Field(default=None, max_length=100)
    funnel: str | None = Field(default=None, max_length=100)


class EngineUsage(BaseModel):
    """Token usage as the engine reported it (absent fields: not reported)."""

    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)


class ModelBuild(BaseModel):
    """The model build an engine reported in its response (OpenAI-compatible ``model`` and
    ``system_fingerprint``). Absent fields: not reported."""

    model: str | None = Field(default=None, max_length=MODEL_BUILD_MAX_LENGTH)
    system_fingerprint: str | None = Field(default=None, max_length=MODEL_BUILD_MAX_LENGTH)
