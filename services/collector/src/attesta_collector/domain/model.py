"""The collector's domain: prompts, engines, schedules, slots and collection ids. Pure, no I/O.

A *collection* is one sample: (schedule, prompt, engine, slot, sample). Its id is derived from
those five values alone, so a restart, a redelivery or a second collector instance computes the
same id and can never collect the same sample twice; the id becomes the run id.
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from croniter import croniter

# The API's request models are the domain's input (re-exported: `X as X`).
from attesta_contracts.api.collector import (
    EngineSpec as EngineSpec,
    MissedSlots as MissedSlots,
    PromptSpec as PromptSpec,
    PromptTags as PromptTags,
    PromptUpdate as PromptUpdate,
    RetrySpec as RetrySpec,
    ScheduleSpec as ScheduleSpec,
)
from attesta_platform.brandmatch import names_brand
from attesta_platform.cited_sources import brand_hosts

def check_cron(expression: str) -> str | None:
    """Why ``expression`` is not a valid cron expression, or None."""
    return None if croniter.is_valid(expression) else f"invalid cron expression {expression!r}"

COLLECTION_NAMESPACE = uuid.UUID("6f1c1a52-6b8e-4d0e-9a56-2f8a3f2c0c11")

@dataclass(frozen=True)
class BrandNames:
    """What the collector needs of a tracked brand (the classifier owns brands)."""

    brand_id: str
    name: str
    aliases: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    competitors: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def hosts(self) -> tuple[str, ...]:
        return brand_hosts(self.domains)


def branded_brands(text: str, brands: list[BrandNames]) -> list[str]:
    """Ids of the tracked brands the prompt names (name, alias or domain), with the classifier's
    own matcher: accent/case/width-insensitive whole words."""
    return [b.brand_id for b in brands if names_brand(text, b.names, b.hosts)]


def prompt_key(spec: PromptSpec) -> str:
    """What makes two imported rows "the same prompt": set, locale and whitespace-folded text.
    A re-import of the same file finds every key and changes nothing."""
    return f"{spec.prompt_set}\x1f{spec.locale}\x1f{' '.join(spec.text.split())}"


# --------------------------------------------------------------------------- schedules


@dataclass(frozen=True)
class Cadence:
    cron: str | None = None
    interval_s: int | None = None
    anchor: datetime = datetime(2000, 1, 1, tzinfo=UTC)  # interval slots: anchor + k·interval

    def next_after(self, t: datetime) -> datetime:
        """The first slot strictly after ``t``."""
        if self.cron is not None:
            after: datetime = croniter(self.cron, t.astimezone(UTC)).get_next(datetime)
            return after.astimezone(UTC)
        step = self.interval_s or 0
        k = math.floor((t - self.anchor).total_seconds() / step) + 1
        return self.anchor + timedelta(seconds=k * step)

    def latest_at_or_before(self, t: datetime) -> datetime:
        if self.cron is not None:
            it = croniter(self.cron, t.astimezone(UTC) + timedelta(seconds=1))
            before: datetime = it.get_prev(datetime)
            return before.astimezone(UTC)
        step = self.interval_s or 0
        k = math.floor((t - self.anchor).total_seconds() / step)
        return self.anchor + timedelta(seconds=k * step)


def due_slots(cadence: Cadence, planned_through: datetime | None, now: datetime,
              policy: MissedSlots, max_catch_up: int) -> tuple[list[datetime], int]:
    """Slots to collect now (oldest first), and how many missed slots the policy skipped.

    ``planned_through`` is the last slot already planned (None for a new schedule: its first
    slot is the latest one at or before ``now``; nothing before it counts as missed). The
    skipped count is exact up to ``SKIP_COUNT_CAP``, where it stops counting."""
    latest = cadence.latest_at_or_before(now)
    if planned_through is None:
        return [latest], 0
    if latest <= planned_through:
        return [], 0
    keep_n = 1 if policy is MissedSlots.SKIP else max_catch_up
    kept = [latest]
    while len(kept) < keep_n:
        prev = cadence.latest_at_or_before(kept[0] - timedelta(seconds=1))
        if prev <= planned_through:
            break
        kept.insert(0, prev)
    skipped, t = 0, planned_through
    while skipped < SKIP_COUNT_CAP:
        t = cadence.next_after(t)
        if t >= kept[0]:
            break
        skipped += 1
    return kept, skipped


SKIP_COUNT_CAP = 100_000


def collection_id(schedule_id: str, prompt_id: str, engine_id: str, slot: datetime,
                  sample: int) -> str:
    """Deterministic id of one sample; also the run id of the answer it collects."""
    slot_text = slot.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    key = "\x1f".join((schedule_id, prompt_id, engine_id, slot_text, str(sample)))
    return f"col-{uuid.uuid5(COLLECTION_NAMESPACE, key)}"


def prompt_matches(prompt_set: str, tags: dict[str, str | None], sets: list[str],
                   tag_filter: list[str]) -> bool:
    """A schedule takes prompts by set and/or tag; with neither it takes every live prompt."""
    if sets and prompt_set not in sets:
        return False
    if tag_filter:
        values = {v for v in tags.values() if v}
        return bool(values & set(tag_filter))
    return True


# --------------------------------------------------------------------------- engine faults


class FaultKind(StrEnum):
    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"  # 429
    SERVER_ERROR = "server_error"  # 5xx
    CLIENT_ERROR = "client_error"  # other 4xx (bad key, bad model): asking again will not help
    CONNECTION = "connection"
    MALFORMED = "malformed"  # not JSON, or no choices[0].message.content
    EMPTY_ANSWER = "empty_answer"
    TOO_LARGE = "too_large"
    NO_KEY = "no_key"


RETRYABLE = frozenset({FaultKind.TIMEOUT, FaultKind.RATE_LIMITED, FaultKind.SERVER_ERROR,
                       FaultKind.CONNECTION, FaultKind.MALFORMED, FaultKind.EMPTY_ANSWER})


@dataclass
class EngineFault(Exception):
    """An engine call that produced no usable answer; ``kind`` decides whether to retry."""

    kind: FaultKind
    reason: str
    retry_after_s: float | None = None

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.reason}"

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE


@dataclass(frozen=True)
class EngineAnswer:
    text: str
    model: str
    raw: bytes  # the engine's response body, exactly as received
    annotations: list[dict[str, Any]] = field(default_factory=list)
    citations: list[Any] = field(default_factory=list)
    usage: dict[str, int] | None = None
    latency_ms: float = 0.0


def parse_chat_completion(body: bytes, max_answer_chars: int
                          ) -> tuple[str, str | None, list[Any], list[Any], dict[str, int] | None]:
    """(text, model, annotations, citations, usage) of an OpenAI-style chat completion, or an
    ``EngineFault`` for a body that is not one."""
    import orjson

    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise EngineFault(FaultKind.MALFORMED, f"response is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise EngineFault(FaultKind.MALFORMED, "response is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise EngineFault(FaultKind.MALFORMED, "response has no choices[0]")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise EngineFault(FaultKind.MALFORMED, "choices[0] has no message")
    content = message.get("content")
    if content is None or (isinstance(content, str) and not content.strip()):
        raise EngineFault(FaultKind.EMPTY_ANSWER, "the engine answered with no text")
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise EngineFault(FaultKind.MALFORMED, "message.content is not text")
    if not content.strip():
        raise EngineFault(FaultKind.EMPTY_ANSWER, "the engine answered with no text")
    if len(content) > max_answer_chars:
        raise EngineFault(FaultKind.TOO_LARGE,
                          f"answer of {len(content)} characters exceeds {max_answer_chars}")
    annotations = message.get("annotations") or []
    citations = data.get("citations") or message.get("citations") or []
    usage_raw = data.get("usage") if isinstance(data.get("usage"), dict) else None
    usage = None
    if usage_raw:
        usage = {k: int(usage_raw[k]) for k in ("prompt_tokens", "completion_tokens",
                                                "total_tokens")
                 if isinstance(usage_raw.get(k), int) and not isinstance(usage_raw.get(k), bool)
                 and usage_raw[k] >= 0}
    model = data.get("model") if isinstance(data.get("model"), str) else None
    return (content, model, annotations if isinstance(annotations, list) else [],
            citations if isinstance(citations, list) else [], usage or None)


_RETRY_AFTER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*$")


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After in seconds (only the delta-seconds form; capped by the caller)."""
    if not value:
        return None
    m = _RETRY_AFTER.match(value)
    return float(m.group(1)) if m else None
