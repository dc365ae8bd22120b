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
from typing import Any, NamedTuple

from croniter import CroniterBadDateError, croniter
import orjson

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
from attesta_contracts.runs import MODEL_BUILD_MAX_LENGTH, ModelBuild
from attesta_platform.brandmatch import names_brand
from attesta_platform.cited_sources import brand_hosts

# A cron's fields: ASCII digits, the usual cron characters and the month and weekday names, so
# no other Unicode digit (croniter reads "٠ ٠ * * *" as midnight) and no "R" (croniter's random
# minute: a slot that moves every time it is computed) reaches the planner.
_CRON_FIELD = (r"(?:[0-9*?,/#-]|l|w|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
               r"|sun|mon|tue|wed|thu|fri|sat)+")
_CRON_SYNTAX = re.compile(rf"{_CRON_FIELD}(?:[ \t]+{_CRON_FIELD}){{4}}", re.ASCII | re.IGNORECASE)

# How far apart a cron's occurrences may be: a schedule must fire at least once a year (the
# longest interval_s, too). A cron that never fires ("0 0 30 2 *") or only on 29 February (every
# four years: its previous and its next occurrence are never both within 366 days) is refused.
CRON_HORIZON = timedelta(days=366)
# croniter searches this many years either side of the start (its own bound, instead of its
# default 50): at least CRON_HORIZON, and a stored cron that never fires fails at once.
_CRON_SEARCH_YEARS = 1


class CadenceError(ValueError):
    """A cadence that yields no slot (a cron stored before crons were checked at all)."""


def _croniter(expression: str, start: datetime) -> croniter:
    return croniter(expression, start.astimezone(UTC),
                    max_years_between_matches=_CRON_SEARCH_YEARS)


def check_cron(expression: str, now: datetime) -> str | None:
    """Why ``expression`` is not a cron a schedule may use at ``now``, or None: five fields of
    ASCII cron syntax whose previous and next occurrences are both within ``CRON_HORIZON``."""
    if not _CRON_SYNTAX.fullmatch(expression):
        return (f"invalid cron expression {expression!r}: five fields of ASCII digits, "
                f"* , - / ? # L W and month or weekday names")
    if not croniter.is_valid(expression):
        return f"invalid cron expression {expression!r}"
    rarely = (f"cron {expression!r} must fire at least once a year: it has no occurrence within "
              f"{CRON_HORIZON.days} days before or after now")
    try:
        before: datetime = _croniter(expression, now + timedelta(seconds=1)).get_prev(datetime)
        after: datetime = _croniter(expression, now).get_next(datetime)
    except CroniterBadDateError:
        return rarely
    except ValueError as exc:  # croniter's other errors (a nth weekday it cannot compute, ...)
        return f"invalid cron expression {expression!r}: {exc}"
    if now - before > CRON_HORIZON or after - now > CRON_HORIZON:
        return rarely
    return None

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
            try:
                after: datetime = _croniter(self.cron, t).get_next(datetime)
            except CroniterBadDateError:
                raise self._no_slot("after", t) from None
            return after.astimezone(UTC)
        step = self.interval_s or 0
        k = math.floor((t - self.anchor).total_seconds() / step) + 1
        return self.anchor + timedelta(seconds=k * step)

    def latest_at_or_before(self, t: datetime) -> datetime:
        if self.cron is not None:
            try:
                before: datetime = _croniter(self.cron, t + timedelta(seconds=1)).get_prev(datetime)
            except CroniterBadDateError:
                raise self._no_slot("before", t) from None
            return before.astimezone(UTC)
        step = self.interval_s or 0
        k = math.floor((t - self.anchor).total_seconds() / step)
        return self.anchor + timedelta(seconds=k * step)

    def slots_between(self, after: datetime, before: datetime, cap: int) -> int:
        """How many slots lie strictly between ``after`` and ``before``: exact for an interval
        (arithmetic), for a cron counted one by one up to ``cap`` (about 25 µs each: a
        minutely cron a year behind would be half a million, seconds of the planner's time)."""
        if self.cron is None:
            first = self.next_after(after)
            if first >= before:
                return 0
            return math.ceil((before - first).total_seconds() / (self.interval_s or 1))
        occurrences = _croniter(self.cron, after)
        n = 0
        while n < cap:
            try:
                if occurrences.get_next(datetime) >= before:
                    break
            except CroniterBadDateError:
                break
            n += 1
        return n

    def _no_slot(self, side: str, t: datetime) -> CadenceError:
        return CadenceError(f"cron {self.cron!r} has no occurrence within a year {side} "
                            f"{t.astimezone(UTC):%Y-%m-%d}")


def due_slots(cadence: Cadence, planned_through: datetime | None, now: datetime,
              policy: MissedSlots, max_catch_up: int) -> tuple[list[datetime], int]:
    """Slots to collect now (oldest first), and how many missed slots the policy skipped.

    ``planned_through`` is the last slot already planned (None for a new schedule: its first
    slot is the latest one at or before ``now``; nothing before it counts as missed). The
    skipped count is exact for an interval; for a cron it stops counting at
    ``SKIP_COUNT_CAP``."""
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
    return kept, cadence.slots_between(planned_through, kept[0], SKIP_COUNT_CAP)


# A cron's skipped slots are counted one by one; past this many the count says "at least" (it
# used to be 100,000: seven seconds of a blocked event loop for a minutely cron a year behind).
SKIP_COUNT_CAP = 2_000

# A schedule whose planning failed is due again after 1 min, doubling, at most 1 h: never
# re-claimed every planner round, and never more than an hour late once its cause is gone (an
# update of the schedule makes it due at once anyway).
PLAN_RETRY_FIRST = timedelta(minutes=1)
PLAN_RETRY_MAX = timedelta(hours=1)


def plan_retry_at(now: datetime, failures: int) -> datetime:
    """When a schedule whose planning failed ``failures`` times in a row is due again."""
    doublings: int = min(max(failures, 1) - 1, 10)
    return now + min(PLAN_RETRY_FIRST * (1 << doublings), PLAN_RETRY_MAX)


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
class ReportedBuild:
    """The model build an endpoint reported (``model``, ``system_fingerprint``), cleaned, and
    why a reported value was changed or dropped (shown on the collection, never a failure:
    a build is a label, the answer stands without it)."""

    build: ModelBuild | None = None
    notes: tuple[str, ...] = ()


# Control characters (NUL among them: PostgreSQL text refuses it) never reach a stored label.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_JSON_TYPES = {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}


def _build_field(name: str, value: Any, notes: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        kind = _JSON_TYPES.get(type(value), type(value).__name__)
        notes.append(f"{name}: the engine reported a JSON {kind}, not a string; dropped")
        return None
    if _CONTROL.search(value):
        value = _CONTROL.sub("", value)
        notes.append(f"{name}: control characters removed")
    value = value.strip()
    if len(value) > MODEL_BUILD_MAX_LENGTH:
        notes.append(f"{name}: {len(value)} characters reported, kept the first "
                     f"{MODEL_BUILD_MAX_LENGTH}")
        value = value[:MODEL_BUILD_MAX_LENGTH]
    return value or None


def reported_build(data: dict[str, Any]) -> ReportedBuild:
    """The build fields of an OpenAI-compatible response body: strings, bounded to
    ``MODEL_BUILD_MAX_LENGTH``; absent or null fields are None; anything else is dropped with
    a note."""
    notes: list[str] = []
    model = _build_field("model", data.get("model"), notes)
    fingerprint = _build_field("system_fingerprint", data.get("system_fingerprint"), notes)
    build = (ModelBuild(model=model, system_fingerprint=fingerprint)
             if model is not None or fingerprint is not None else None)
    return ReportedBuild(build, tuple(notes))


@dataclass(frozen=True)
class EngineAnswer:
    text: str
    model: str
    raw: bytes  # the engine's response body, exactly as received
    annotations: list[dict[str, Any]] = field(default_factory=list)
    citations: list[Any] = field(default_factory=list)
    usage: dict[str, int] | None = None
    latency_ms: float = 0.0
    reported: ReportedBuild = field(default_factory=ReportedBuild)


class ParsedCompletion(NamedTuple):
    text: str
    model: str | None  # the reported model, cleaned (``reported.build.model``)
    annotations: list[Any]
    citations: list[Any]
    usage: dict[str, int] | None
    reported: ReportedBuild


def parse_chat_completion(body: bytes, max_answer_chars: int) -> ParsedCompletion:
    """The text, model, annotations, citations, usage and reported build of an OpenAI-style
    chat completion, or an ``EngineFault`` for a body that is not one."""
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
    reported = reported_build(data)
    return ParsedCompletion(content, reported.build.model if reported.build else None,
                            annotations if isinstance(annotations, list) else [],
                            citations if isinstance(citations, list) else [], usage or None,
                            reported)


_RETRY_AFTER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*$")


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After in seconds (only the delta-seconds form; capped by the caller)."""
    if not value:
        return None
    m = _RETRY_AFTER.match(value)
    return float(m.group(1)) if m else None
