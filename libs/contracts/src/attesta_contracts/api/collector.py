"""The collector's API (served by the collector, forwarded by the gateway): prompts, engines,
engine secrets, schedules and collections. Request models forbid unknown fields (a misspelt field
is a 422, and an engine body carrying a key is refused: a key is stored once as a secret)."""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from attesta_contracts.runs import CollectionMethod, ModelBuild
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    field_validator,
    model_validator,
)

# Five whitespace-separated cron fields; the collector checks the expression fully (croniter).
_CRON_SHAPE = re.compile(r"\S+(\s+\S+){4}")

Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")]
Tag = Annotated[str, StringConstraints(min_length=1, max_length=100, strip_whitespace=True)]
# A name the operator lists for a workspace in ATTESTA_COLLECTOR_OPERATOR_KEYS (an old engine's
# api_key_env becomes one, so it keeps the variable names' characters).
OperatorKeyName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


# --------------------------------------------------------------------------- prompts


class PromptTags(_Strict):
    topic: Tag | None = None
    persona: Tag | None = None
    funnel: Literal["awareness", "consideration", "decision", "retention"] | None = None


class PromptSpec(_Strict):
    """A prompt as a client gives it (API body, one CSV/JSONL row)."""

    prompt_set: Id = "default"
    text: Annotated[str, StringConstraints(min_length=1, max_length=4000, strip_whitespace=True)]
    locale: Annotated[str, StringConstraints(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")] = "en"
    tags: PromptTags = Field(default_factory=PromptTags)
    brand_ids: list[Id] = Field(default_factory=list, max_length=50)

    @field_validator("text")
    @classmethod
    def _no_nul(cls, v: str) -> str:
        if "\x00" in v:
            raise ValueError("text contains a NUL character")
        return v


class PromptUpdate(_Strict):
    prompt_set: Id | None = None
    text: Annotated[str, StringConstraints(min_length=1, max_length=4000,
                                           strip_whitespace=True)] | None = None
    locale: Annotated[str, StringConstraints(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")] | None = None
    tags: PromptTags | None = None
    brand_ids: list[Id] | None = Field(default=None, max_length=50)


# --------------------------------------------------------------------------- engines

# Engine params that turn on a web search (Perplexity's search_mode and filters, Qwen's
# enable_search, ...): an engine that sets one answers from the web, not from the model alone.
SEARCH_PARAMS = frozenset({"web_search", "enable_search", "search_mode", "search_context_size",
                           "search_recency_filter", "search_after_date_filter",
                           "search_before_date_filter"})


def search_options(model: str, params: dict[str, Any]) -> list[str]:
    """What in an engine's configuration turns on a web search: params named in
    ``SEARCH_PARAMS`` (unless set to false), and an OpenRouter-style ``:online`` model."""
    found = sorted(k for k, v in params.items() if k in SEARCH_PARAMS and v is not False)
    if model.endswith(":online"):
        found.append(f"model {model!r}")
    return found


def derived_collection_method(kind: str, model: str, params: dict[str, Any]) -> CollectionMethod:
    """An engine's collection method when it does not declare one."""
    if kind == "assistant":
        return "assistant"
    return "api_with_search" if search_options(model, params) else "api"


class RetrySpec(_Strict):
    attempts: int = Field(default=3, ge=1, le=10)
    initial_backoff_s: float = Field(default=0.5, gt=0, le=60)
    max_backoff_s: float = Field(default=10.0, gt=0, le=600)


class EngineSpec(_Strict):
    """An engine to ask. ``openai``: any OpenAI-compatible chat-completions endpoint.
    ``assistant``: our own grounded assistant, asked through Kafka like the gateway does.

    Its key, if it needs one, is either a secret of this workspace (``api_key_secret_id``: give
    the key once with ``POST /v1/secrets``; it is stored encrypted and never returned) or a key
    the operator provides to this workspace by name (``operator_key``). A tenant never names a
    file or environment variable of the server. ``base_url`` must pass the outbound policy (a
    public address, or one the operator allow-lists), at create, update and every call."""

    engine_id: Id | None = None
    kind: Literal["openai", "assistant"] = "openai"
    name: Annotated[str, StringConstraints(min_length=1, max_length=100)]  # the run's `engine`
    base_url: Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+$", max_length=500)] | None = None
    model: Annotated[str, StringConstraints(min_length=1, max_length=200)] = "default"
    params: dict[str, float | int | str | bool] = Field(default_factory=dict, max_length=20)
    api_key_secret_id: Id | None = None
    operator_key: OperatorKeyName | None = None
    concurrency: int = Field(default=4, ge=1, le=256)
    rate_limit_per_s: float | None = Field(default=None, gt=0, le=10_000)
    timeout_s: float = Field(default=60.0, gt=0, le=600)
    retry: RetrySpec = Field(default_factory=RetrySpec)
    # How its answers are collected (issue #25 item 4): metrics never average across methods.
    # Omitted: ``assistant`` for our own assistant, ``api_with_search`` when params or the
    # model turn on a web search (``search_options``), else ``api``. An endpoint that searches
    # on its own (a grounded model, Perplexity's sonar) must declare ``api_with_search``.
    collection_method: CollectionMethod | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_server_side_key_reference(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for old in ("api_key_env", "api_key_file"):
                if old in data:
                    raise ValueError(
                        f"{old} is no longer accepted (an engine cannot name a variable or file "
                        "of the server): store the key as a secret with POST /v1/secrets and "
                        "give its id as api_key_secret_id")
        return data

    @model_validator(mode="after")
    def _kind_fields(self) -> EngineSpec:
        if self.kind == "openai" and not self.base_url:
            raise ValueError("an openai engine needs base_url")
        if self.kind == "assistant" and (self.base_url or self.api_key_secret_id
                                         or self.operator_key):
            raise ValueError("the assistant engine takes no base_url or key")
        if self.api_key_secret_id and self.operator_key:
            raise ValueError("give api_key_secret_id or operator_key, not both")
        reserved = {"model", "messages", "stream", "n"}
        if bad := sorted(reserved & set(self.params)):
            raise ValueError(f"params may not set {', '.join(bad)}")
        self._check_collection_method()
        return self

    def _check_collection_method(self) -> None:
        method = self.collection_method
        if method is None:
            self.collection_method = derived_collection_method(self.kind, self.model, self.params)
        elif self.kind == "assistant" and method != "assistant":
            raise ValueError("the assistant engine's collection_method is 'assistant'")
        elif self.kind == "openai" and method == "assistant":
            raise ValueError("collection_method 'assistant' is only for our own assistant "
                             "(kind 'assistant'): an openai engine is 'api' or 'api_with_search'")
        elif method == "api" and (found := search_options(self.model, self.params)):
            raise ValueError(f"{', '.join(found)} turn(s) on a web search: declare "
                             "collection_method 'api_with_search'")


# --------------------------------------------------------------------------- engine secrets

# A key as engines send it (a Bearer token): visible ASCII, one line.
_SECRET_CHARS = re.compile(r"^[\x21-\x7e]+$")


class SecretSpec(_Strict):
    """A key to keep for this workspace's engines. ``value`` is write-only: stored encrypted,
    never returned, never logged; an engine refers to the secret by its ``secret_id``."""

    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._:@/+-]{0,99}$")]
    # (the pattern is checked by the validator below: pydantic applies none to a SecretStr)
    value: SecretStr = Field(min_length=1, max_length=4096,
                             json_schema_extra={"pattern": _SECRET_CHARS.pattern})

    @field_validator("value")
    @classmethod
    def _one_visible_line(cls, v: SecretStr) -> SecretStr:
        if not _SECRET_CHARS.fullmatch(v.get_secret_value()):
            raise ValueError("value must be visible ASCII characters only (no spaces, tabs or "
                             "line breaks)")
        return v


class Secret(BaseModel):
    """A secret's metadata; its value is never returned."""

    secret_id: str
    name: str
    created_at: datetime
    retired_at: datetime | None = None


class SecretList(BaseModel):
    items: list[Secret]


# --------------------------------------------------------------------------- schedules


class MissedSlots(StrEnum):
    """What a collector does with slots that fell due while no collector ran.

    ``collect``: every missed slot is collected (up to ``max_catch_up_slots``, the oldest
    beyond that are skipped); ``skip``: only the most recent due slot is collected."""

    COLLECT = "collect"
    SKIP = "skip"


class ScheduleSpec(_Strict):
    schedule_id: Id | None = None
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)] = "schedule"
    prompt_sets: list[Id] = Field(default_factory=list, max_length=50)
    prompt_tags: list[Tag] = Field(default_factory=list, max_length=50)  # any of topic/persona/funnel
    engine_ids: list[Id] = Field(min_length=1, max_length=50)
    cron: Annotated[str, StringConstraints(min_length=1, max_length=100)] | None = None
    interval_s: int | None = Field(default=None, ge=60, le=366 * 86400)
    samples: int = Field(default=1, ge=1, le=20)
    missed_slots: MissedSlots = MissedSlots.SKIP
    max_catch_up_slots: int = Field(default=24, ge=1, le=1000)
    active: bool = True

    @model_validator(mode="after")
    def _cadence(self) -> ScheduleSpec:
        if (self.cron is None) == (self.interval_s is None):
            raise ValueError("give exactly one of cron or interval_s")
        if self.cron is not None and not _CRON_SHAPE.fullmatch(self.cron):
            raise ValueError(f"invalid cron expression {self.cron!r}: five fields expected")
        return self


# --------------------------------------------------------------------------- responses


class Prompt(BaseModel):
    prompt_id: str
    prompt_set: str
    text: str
    locale: str
    tags: dict[str, str]
    brand_ids: list[str]
    branded: bool  # the text names a tracked brand (the classifier's name matcher)
    branded_brand_ids: list[str]
    created_at: datetime
    updated_at: datetime
    retired_at: datetime | None = None


class PromptList(BaseModel):
    items: list[Prompt]
    next_after: str | None = None


class ImportRow(BaseModel):
    line: int
    outcome: Literal["accepted", "unchanged", "refused"]
    prompt_id: str | None = None
    reason: str | None = None


class ImportResult(BaseModel):
    accepted: int
    unchanged: int
    refused: int
    rows: list[ImportRow]


class Engine(EngineSpec):
    engine_id: str
    created_at: datetime
    updated_at: datetime
    retired_at: datetime | None = None


class EngineList(BaseModel):
    items: list[Engine]


class Schedule(ScheduleSpec):
    schedule_id: str
    planned_through: datetime | None = None
    next_due_at: datetime | None = None
    created_at: datetime
    retired_at: datetime | None = None
    # Why the planner could not plan it last time (absent once a plan succeeds or the schedule
    # is changed), when, and how many times in a row; it is tried again at next_due_at.
    plan_error: str | None = None
    plan_error_at: datetime | None = None
    plan_failures: int = 0


class ScheduleList(BaseModel):
    items: list[Schedule]


class RunOnce(_Strict):
    slot: AwareDatetime | None = None


class RunOnceResult(BaseModel):
    schedule_id: str
    slot: datetime
    new_collections: int


class Collection(BaseModel):
    collection_id: str
    schedule_id: str
    prompt_id: str
    engine_id: str
    slot: datetime
    sample: int
    status: Literal["pending", "awaiting_reply", "collected", "failed"]
    attempts: int
    reason: str | None = None  # why it failed
    run_id: str | None = None
    model: str | None = None
    answer_sha256: str | None = None
    raw_response_sha256: str | None = None
    latency_ms: float | None = None
    usage: dict[str, int] | None = None
    sources: list[dict[str, Any]] = Field(default_factory=list)
    finished_at: datetime | None = None
    # How it was collected and the model build the endpoint reported (issue #25 item 4; None
    # before it was collected, or collected before these fields existed). ``model_build_notes``:
    # why a reported build value was truncated, cleaned or dropped.
    collection_method: CollectionMethod | None = None
    model_build: ModelBuild | None = None
    model_build_notes: list[str] = Field(default_factory=list)


class CollectionList(BaseModel):
    items: list[Collection]
    next_after: str | None = None
