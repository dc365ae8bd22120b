"""Alerts (issue #25): rules and channels of a workspace, the evaluation of its rules when a
week closes and after each schedule slot, and the delivery of what fired.

Evaluation. The periodic worker (``entrypoints/workers.py``) asks, every few minutes, for the
last *closed* ISO week (Monday 00:00 UTC to the next Monday) against the week before it. Each
workspace with an active (not muted, not deleted) rule is evaluated once per week: the row
``alert_evaluations (workspace, period_start)`` is inserted in the same transaction as the
alerts, their pending deliveries and their ``alerts.raised.v1`` events, so a second worker or a
restart finds the row and does nothing (and two concurrent evaluations cannot both commit).
The counts are the metrics' own input (``uow.decisions.tallies``: the current class of each
(run, brand) pair, per prompt), cut to each rule's brand and segment; all rules of the workspace
are decided together by ``domain.alerts.evaluate`` (prompt-unit test, Benjamini-Hochberg over
the powered rules, never on an underpowered cell). Runs answered after a week closed, for that
week, are not seen by its evaluation (it is done once).

After a slot. The collector announces each completed schedule slot
(``collection.slot-completed.v1``, with the run ids it produced); the workspace's rules are then
evaluated on the *open* ISO week so far (the week the slot completed in) against the last closed
week, with the same cells, test, correction and underpowered rule. Once per (workspace,
schedule, slot): the row ``alert_slot_evaluations`` commits with what fired. A rule fires at
most once per (rule, period), whichever evaluation sees it first (a slot's, a later slot's, the
weekly close's): the alerts' unique index ``alerts_rule_period``, and ``add_alert`` says whether
it stored one. While some of the slot's runs are not recorded here yet, the evaluation raises
``SlotRunsPending`` (a ``TransientError``: the shared consumer retries later), at most
``alert_slot_wait_s`` after the slot completed; then it evaluates what is recorded.

The looks at one week share each rule's alpha. Every slot's evaluation and the week's close is
a *look* at the same (rule, week); each tested rule's adjusted p-value is held to the share of
its alpha that look may spend (``domain.alerts.look``: the open week's looks along an
O'Brien-Fleming-type curve of the information fraction, up to a fifth of alpha; the close the
rest), so the week's looks together fire a rule on noise no more often than ``alpha``. What
each look spent is appended to ``alert_looks`` in the same transaction as the evaluation's row
and its alerts, under a per-workspace transaction lock, so two evaluations never spend from the
same state and a redelivered slot spends nothing twice.

Delivery. A pending delivery per (alert, channel) is the work item; the delivery worker claims
due rows (a committed state change with a lease) before sending, so two workers never send the
same row and a crashed worker's claim lapses and is taken again. A retryable failure is tried
again after the platform's backoff (``attesta_platform.outcomes.RetryPolicy``: exponential with
jitter); a permanent one, or the last attempt, makes it ``dead`` and stages an
``alerts.delivery-dead-lettered.v1`` event with the reason in the same transaction.

At-least-once, honestly: a worker that dies after the receiver accepted a request but before
its outcome committed leaves the row ``sending``; once the lease lapses it is sent again. The
request carries the delivery's id as its idempotency id (``Idempotency-Key`` and the payload's
``delivery_id``), so a receiver that remembers ids it accepted sees each alert once per channel.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import secrets
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from attesta_classifier.domain import alerts as domain
from attesta_classifier.domain import alert_commands as c
from attesta_classifier.domain.notifications import (
    AlertMessage, Channel, DeliveryFailed, DeliveryReceipt, Period)
from attesta_classifier.service_layer import metrics
from attesta_classifier.service_layer.errors import Invalid, NotFound
from attesta_classifier.service_layer.unit_of_work import (
    AlertsUnitOfWork, ClaimedDelivery, RunLink, StoredAlert, StoredBrand, StoredChannel,
    StoredDelivery, StoredRule, Tally)
from attesta_contracts.alerts import AlertDeliveryDeadLettered, AlertPeriod, AlertRaised
from attesta_contracts.runs import COLLECTION_METHODS
from attesta_contracts.topics import ALERT_DELIVERY_DEAD_LETTERED, ALERTS_RAISED
from attesta_platform.brandmatch import names_brand
from attesta_platform.errors import TransientError
from attesta_platform.cited_sources import brand_hosts
from attesta_platform.logs import get_logger
from attesta_platform.outbound import HostUnresolved, OutboundPolicy, OutboundRefused
from attesta_platform.outbox import OutboxRow, staged
from attesta_platform.outcomes import RetryPolicy

log = get_logger("attesta.classifier.alerts")

PRODUCER = "classifier"
WEEK = timedelta(days=7)
RUN_LINKS_PER_PERIOD = 20
SEGMENT_KEYS = ("engine", "tag", "branded", "collection_method")
# How long after a slot completed its evaluation waits for the slot's runs to be recorded here
# (they are classified in the transaction that records them); then it evaluates what is there.
SLOT_WAIT_S = 600.0
CHANNEL_DELETED = "channel deleted"


@dataclass(frozen=True)
class CreatedChannel:
    channel: StoredChannel  # its ``secret`` is shown this once


AlertPage = tuple[list[StoredAlert], str | None]  # (alerts, the next page's cursor)
AlertWithDeliveries = tuple[StoredAlert, list[StoredDelivery]]


@dataclass(frozen=True)
class Evaluation:
    workspace_id: str
    period_start: datetime
    rules: int  # evaluated together
    fired: int
    done: bool  # False: evaluated before (by this worker or another)


class SlotRunsPending(TransientError):
    """Some runs of a completed slot are not recorded (classified) here yet: evaluate later."""


Window = tuple[datetime, datetime, datetime]  # (before_start, after_start, after_end)


# -- the looks port (adapters/alerts_postgres.py's PostgresLooks implements it) ----------------
@dataclass(frozen=True)
class LookRecord:
    """One tested look at a (rule, week) (``alert_looks``): the alpha it spent (``level``), the
    week's total spent after it, the information fraction it saw."""

    rule_id: uuid.UUID
    period_start: datetime
    look: str  # ``slot_look(schedule, slot)`` or ``domain.CLOSE``
    information: float
    level: float
    spent: float
    closing: bool
    p_adjusted: float | None
    fired: bool


class LookLedger(Protocol):
    async def lock(self, workspace_id: str) -> None:
        """Serialise the looks at one workspace until the transaction ends."""

    async def spending(self, period_start: datetime, rules: Sequence[tuple[uuid.UUID, float]]
                       ) -> dict[uuid.UUID, domain.Spending]:
        """Each (rule id, alpha)'s state in the week starting ``period_start``."""

    async def record(self, looks: Sequence[LookRecord]) -> None:
        """Append the looks (a look recorded before is left as it was)."""


class LooksUnitOfWork(AlertsUnitOfWork, Protocol):
    """The alerts' unit of work with the looks at each (rule, week) bound."""

    looks: LookLedger


# -- the delivery port (adapters/notifiers.py implements it) -----------------------------------
class Notifier(Protocol):
    async def __call__(self, channel: Channel, message: AlertMessage, *,
                       delivery_id: str) -> DeliveryReceipt:
        """One attempt; raises ``DeliveryFailed`` (``retryable`` says whether to try again)."""


@dataclass(frozen=True)
class DeliveryPolicy:
    """Attempts per delivery (claims, a lapsed one included), the backoff between them, and
    the claim's lease (longer than one attempt can take)."""

    retry: RetryPolicy = RetryPolicy(attempts=5, initial_delay_s=5.0, max_delay_s=600.0)
    lease_s: float = 60.0


# -- periods ----------------------------------------------------------------------------------
def last_closed_week(now: datetime) -> tuple[datetime, datetime, datetime]:
    """(before_start, after_start, after_end): the last ISO week that ended at or before ``now``
    (UTC) and the week before it."""
    now = now.astimezone(UTC)
    this_week = datetime(now.year, now.month, now.day, tzinfo=UTC) - timedelta(days=now.weekday())
    return this_week - 2 * WEEK, this_week - WEEK, this_week


def open_week(at: datetime) -> Window:
    """(before_start, after_start, after_end): the ISO week holding ``at`` (open while ``at`` is
    in it) and the closed week before it."""
    at = at.astimezone(UTC)
    this_week = datetime(at.year, at.month, at.day, tzinfo=UTC) - timedelta(days=at.weekday())
    return this_week - WEEK, this_week, this_week + WEEK


# -- rules ------------------------------------------------------------------------------------
def _segment(segment: dict[str, Any]) -> dict[str, Any]:
    unknown = set(segment) - set(SEGMENT_KEYS)
    if unknown:
        raise Invalid(f"unknown segment keys: {', '.join(sorted(unknown))}")
    method = segment.get("collection_method")
    if method is not None and method not in COLLECTION_METHODS:
        raise Invalid(f"unknown collection_method {method!r}: one of "
                      f"{', '.join(COLLECTION_METHODS)}")
    return {k: segment[k] for k in SEGMENT_KEYS if segment.get(k) is not None}


def _check_rule(metric: str, direction: str, min_n: int, min_prompts: int, alpha: float) -> None:
    try:  # the domain's own validation, so a stored rule is always one it can evaluate
        domain.AlertRule("x", metric, {}, direction, min_n, min_prompts, alpha)  # type: ignore[arg-type]
    except ValueError as exc:
        raise Invalid(str(exc)) from None


async def create_rule(cmd: c.CreateAlertRule, uow: AlertsUnitOfWork) -> StoredRule:
    _check_rule(cmd.metric, cmd.direction, cmd.min_n, cmd.min_prompts, cmd.alpha)
    now = datetime.now(UTC)
    rule = StoredRule(uuid.uuid4(), cmd.workspace_id, cmd.brand_id, cmd.metric, cmd.name,
                      _segment(cmd.segment), cmd.direction, cmd.min_n, cmd.min_prompts,
                      cmd.alpha, cmd.muted, now, now)
    async with uow:
        if await uow.brands.get(cmd.workspace_id, cmd.brand_id) is None:
            raise Invalid(f"brand {cmd.brand_id!r} is not a brand of this workspace")
        await uow.alerts.add_rule(rule)
        await uow.commit()
    return rule


async def list_rules(query: c.ListAlertRules, uow: AlertsUnitOfWork) -> list[StoredRule]:
    async with uow.read():
        return await uow.alerts.rules(query.workspace_id)


async def get_rule(query: c.GetAlertRule, uow: AlertsUnitOfWork) -> StoredRule:
    async with uow.read():
        rule = await uow.alerts.get_rule(query.workspace_id, query.rule_id)
    if rule is None:
        raise NotFound("no such alert rule in this workspace")
    return rule


async def update_rule(cmd: c.UpdateAlertRule, uow: AlertsUnitOfWork) -> StoredRule:
    changes = dict(cmd.changes)
    if "segment" in changes:
        changes["segment"] = _segment(changes["segment"])
    async with uow:
        rule = await uow.alerts.get_rule(cmd.workspace_id, cmd.rule_id)
        if rule is None:
            raise NotFound("no such alert rule in this workspace")
        merged = replace(rule, **changes)
        _check_rule(merged.metric, merged.direction, merged.min_n, merged.min_prompts,
                    merged.alpha)
        updated = await uow.alerts.update_rule(cmd.workspace_id, cmd.rule_id, changes)
        if updated is None:
            raise NotFound("no such alert rule in this workspace")
        await uow.commit()
    return updated


async def delete_rule(cmd: c.DeleteAlertRule, uow: AlertsUnitOfWork) -> None:
    async with uow:
        if not await uow.alerts.delete_rule(cmd.workspace_id, cmd.rule_id):
            raise NotFound("no such alert rule in this workspace")
        await uow.commit()


# -- channels ---------------------------------------------------------------------------------
async def check_target(kind: str, target: str, policy: OutboundPolicy) -> None:
    """A webhook or Slack URL must pass the shared outbound policy now (its host resolved and
    every address checked); it is checked again, pinned, at each delivery."""
    if kind == "email":
        return
    try:
        await policy.check(target)
    except OutboundRefused as exc:
        raise Invalid(f"target refused: {exc.public_reason}") from None
    except HostUnresolved:
        raise Invalid("target refused: its host name does not resolve") from None


async def create_channel(cmd: c.CreateAlertChannel, uow: AlertsUnitOfWork,
                         alert_outbound: OutboundPolicy = OutboundPolicy()) -> CreatedChannel:
    if cmd.kind not in ("webhook", "slack", "email"):
        raise Invalid(f"unknown channel kind {cmd.kind!r}")
    await check_target(cmd.kind, cmd.target, alert_outbound)
    channel = StoredChannel(uuid.uuid4(), cmd.workspace_id, cmd.kind, cmd.target, cmd.name,
                            secrets.token_urlsafe(32), datetime.now(UTC))
    async with uow:
        await uow.alerts.add_channel(channel)
        await uow.commit()
    return CreatedChannel(channel)


async def list_channels(query: c.ListAlertChannels, uow: AlertsUnitOfWork) -> list[StoredChannel]:
    async with uow.read():
        return await uow.alerts.channels(query.workspace_id)


async def delete_channel(cmd: c.DeleteAlertChannel, uow: AlertsUnitOfWork) -> None:
    async with uow:
        if not await uow.alerts.delete_channel(cmd.workspace_id, cmd.channel_id):
            raise NotFound("no such alert channel in this workspace")
        await uow.commit()


# -- fired alerts -----------------------------------------------------------------------------
def _cursor_encode(at: datetime, alert_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(f"{at.isoformat()}|{alert_id}".encode()).decode()


def _cursor_decode(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        at, alert_id = base64.urlsafe_b64decode(cursor.encode()).decode().split("|", 1)
        return datetime.fromisoformat(at), uuid.UUID(alert_id)
    except (ValueError, binascii.Error, UnicodeError):
        raise Invalid("cursor is not one this API returned") from None


async def list_alerts(query: c.ListAlerts, uow: AlertsUnitOfWork) -> AlertPage:
    before = _cursor_decode(query.cursor) if query.cursor else None
    async with uow.read():
        items = await uow.alerts.alerts(query.workspace_id, before, query.limit + 1)
    more = len(items) > query.limit
    items = items[:query.limit]
    return items, (_cursor_encode(items[-1].raised_at, items[-1].alert_id) if more else None)


async def get_alert(query: c.GetAlert, uow: AlertsUnitOfWork) -> AlertWithDeliveries:
    async with uow.read():
        alert = await uow.alerts.get_alert(query.workspace_id, query.alert_id)
        if alert is None:
            raise NotFound("no such alert in this workspace")
        return alert, await uow.alerts.deliveries(alert.alert_id)


# -- evaluation -------------------------------------------------------------------------------
class _Segments:
    """Decides whether a tally row or a run is in a rule's segment (branded: the prompt names
    a tracked brand of the workspace, as the metrics decide it), labels the places runs cite
    (as the metrics do), and knows each brand's competitors."""

    def __init__(self, brands: Iterable[StoredBrand]) -> None:
        known = list(brands)
        self.brands = [(b.names, brand_hosts(b.domains)) for b in known]
        self.competitors = {b.brand_id: [c for c in b.competitors if c != b.brand_id]
                            for b in known}
        self.labels = metrics.SourceLabels(known)
        self._branded: dict[str, bool] = {}

    def branded(self, prompt: str) -> bool:
        if prompt not in self._branded:
            self._branded[prompt] = any(names_brand(prompt, names, hosts)
                                        for names, hosts in self.brands)
        return self._branded[prompt]

    def admits(self, segment: dict[str, Any], engine: str, prompt: str,
               tags: Iterable[str | None], method: str | None = None) -> bool:
        if "engine" in segment and engine != segment["engine"]:
            return False
        if "collection_method" in segment and method != segment["collection_method"]:
            return False
        if "tag" in segment and segment["tag"] not in set(tags):
            return False
        return "branded" not in segment or self.branded(prompt) == bool(segment["branded"])


Weeks = tuple[metrics.Bucket, metrics.Bucket]  # (the week before, the week after)


class _Buckets:
    """One brand's two weeks in one segment, accumulated as the metrics API accumulates a row
    (``metrics.add_tally``), once per (brand, segment) however many rules read them."""

    def __init__(self, tallies: Sequence[Tally], segments: _Segments, before_start: datetime,
                 after_start: datetime) -> None:
        # Each brand reads its own rows only: without this, a workspace's evaluation walks
        # every tally row once per rule (rules x rows; benchmarks/alert_evaluation.py).
        self.by_brand: dict[str, list[Tally]] = {}
        for t in tallies:
            self.by_brand.setdefault(t.brand_id, []).append(t)
        self.segments, self.before_start, self.after_start = segments, before_start, after_start
        self._weeks: dict[tuple[str, str], Weeks] = {}

    def weeks(self, brand_id: str, segment: dict[str, Any]) -> Weeks:
        key = (brand_id, repr(sorted(segment.items())))
        if key not in self._weeks:
            before, after = metrics.Bucket(), metrics.Bucket()
            for t in self.by_brand.get(brand_id, []):
                if t.bucket < self.before_start or not self.segments.admits(
                        segment, t.engine, t.prompt, (t.topic, t.persona, t.funnel),
                        t.collection_method):
                    continue
                metrics.add_tally(after if t.bucket >= self.after_start else before, t,
                                  self.segments.labels.cited(t))
            self._weeks[key] = (before, after)
        return self._weeks[key]


def cell_of(rule: StoredRule, buckets: _Buckets) -> domain.AnyCell:
    """The rule's metric in both weeks, per prompt, from the buckets the metrics API would build
    for the brand's segment (its competitors' too, in the same segment, for share of voice)."""
    before, after = buckets.weeks(rule.brand_id, rule.segment)
    if rule.metric in domain.MEANS:
        return domain.MeanCell(metrics.prompt_sums(rule.metric, before),
                               metrics.prompt_sums(rule.metric, after),
                               unit_interval=rule.metric in domain.UNIT_INTERVAL_MEANS)
    rivals = [buckets.weeks(c, rule.segment)
              for c in buckets.segments.competitors.get(rule.brand_id, [])]
    return domain.Cell(metrics.prompt_counts(rule.metric, before, [r[0] for r in rivals]),
                       metrics.prompt_counts(rule.metric, after, [r[1] for r in rivals]))


def _domain_rule(rule: StoredRule) -> domain.AlertRule:
    return domain.AlertRule(rule.brand_id, rule.metric, {k: str(v) for k, v in rule.segment.items()},  # type: ignore[arg-type]
                            rule.direction, rule.min_n, rule.min_prompts, rule.alpha)  # type: ignore[arg-type]


def _period(summary: domain.PeriodSummary, start: datetime) -> dict[str, Any]:
    return {"period_start": start.isoformat(), "value": summary.value,
            "successes": summary.wilson.successes, "n": summary.n,
            "prompts": summary.prompts, "ci95_low": summary.wilson.low,
            "ci95_high": summary.wilson.high, "by_prompt_ci95_low": summary.by_prompt.low,
            "by_prompt_ci95_high": summary.by_prompt.high}


def _links(links: Sequence[RunLink], rule: StoredRule, segments: _Segments) -> list[str]:
    return [r.run_id for r in links
            if segments.admits(rule.segment, r.engine, r.prompt, r.tags, r.collection_method)
            ][:RUN_LINKS_PER_PERIOD]


def alert_payload(alert: StoredAlert) -> AlertRaised:
    return AlertRaised(
        alert_id=alert.alert_id, workspace_id=alert.workspace_id, rule_id=alert.rule_id,
        test=alert.test, brand_id=alert.brand_id, metric=alert.metric, segment=alert.segment,
        direction=alert.direction, before=AlertPeriod(**alert.before),
        after=AlertPeriod(**alert.after), change=alert.change, p_value=alert.p_value,
        p_adjusted=alert.p_adjusted, correction=alert.correction,
        family_size=alert.family_size, run_ids=alert.run_ids, raised_at=alert.raised_at)


def raised_event(alert: StoredAlert) -> OutboxRow:
    payload = alert_payload(alert)
    return staged(ALERTS_RAISED, str(alert.rule_id), payload, event_id=alert.alert_id,
                  producer=PRODUCER,
                  correlation_id=f"alerts/{alert.workspace_id}/{alert.period_start.date()}")


def _alert(rule: StoredRule, decision: domain.AlertDecision, family: int,
           before_start: datetime, after_start: datetime, run_ids: dict[str, list[str]],
           test: bool) -> StoredAlert:
    return StoredAlert(
        uuid.uuid4(), rule.workspace_id, rule.rule_id, test, rule.brand_id, rule.metric,
        rule.segment, rule.direction, after_start, before_start,
        _period(decision.before, before_start), _period(decision.after, after_start),
        decision.change, decision.p_value, decision.p_adjusted, decision.correction, family,
        run_ids, datetime.now(UTC))


async def _decide(uow: AlertsUnitOfWork, workspace_id: str, rules: Sequence[StoredRule],
                  window: Window) -> tuple[list[domain.AlertDecision], _Segments, list[float]]:
    """The rules decided together over ``window`` at their own alpha, and each cell's
    information fraction (``domain.information``: the after week's answers over the before
    week's)."""
    before_start, after_start, after_end = window
    tallies = await uow.decisions.tallies(workspace_id, "week", None, before_start, after_end)
    segments = _Segments(await uow.brands.list(workspace_id))
    buckets = _Buckets(tallies, segments, before_start, after_start)
    cells = [(_domain_rule(r), cell_of(r, buckets)) for r in rules]
    return (domain.evaluate(cells, "bh"), segments,
            [domain.information(cell) for _, cell in cells])


async def _run_ids(uow: AlertsUnitOfWork, rule: StoredRule, segments: _Segments,
                   window: tuple[datetime, datetime, datetime]) -> dict[str, list[str]]:
    before_start, after_start, after_end = window
    return {"before": _links(await uow.alerts.run_links(rule.workspace_id, rule.brand_id,
                                                        before_start, after_start), rule, segments),
            "after": _links(await uow.alerts.run_links(rule.workspace_id, rule.brand_id,
                                                       after_start, after_end), rule, segments)}


@dataclass(frozen=True)
class _Tested:
    """A workspace's active rules decided together over a window (read before the write)."""

    window: Window
    rules: list[StoredRule]
    decisions: list[domain.AlertDecision]
    information: list[float]
    segments: _Segments


async def _test(uow: AlertsUnitOfWork, workspace_id: str, window: Window) -> _Tested:
    """The workspace's active rules, decided together over ``window`` (inside the caller's
    read); whether each fires is the look's to say (``_look``)."""
    rules = [r for r in await uow.alerts.rules(workspace_id) if not r.muted]
    decisions, segments, information = await _decide(uow, workspace_id, rules, window)
    return _Tested(window, rules, decisions, information, segments)


async def _look(uow: LooksUnitOfWork, workspace_id: str, tested: _Tested, look_id: str,
                closing: bool) -> list[StoredAlert]:
    """One look at the week ``tested.window[1]`` (inside the caller's transaction): each tested
    rule's adjusted p-value is held to the share of its alpha this look may spend
    (``domain.look``: the open week's looks spend along an O'Brien-Fleming-type curve, the
    close the rest), the looks are recorded, and the alerts of the rules that fired are
    returned (not stored yet). Looks at one workspace are serialised (``looks.lock``), so two
    never spend from the same state."""
    window, period_start = tested.window, tested.window[1]
    await uow.looks.lock(workspace_id)
    powered = [(r, d, t) for r, d, t in zip(tested.rules, tested.decisions, tested.information,
                                            strict=True) if d.p_value is not None]
    states = await uow.looks.spending(period_start, [(r.rule_id, r.alpha) for r, _, _ in powered])
    records, fired = [], []
    for rule, decision, t in powered:
        state = states[rule.rule_id]
        step = domain.look(state, look_id, t, closing=closing)
        if step.spending == state:  # seen before (a redelivery) or after the week's close
            continue
        decided = domain.at_level(decision, step.level)
        records.append(LookRecord(rule.rule_id, period_start, look_id, step.spending.information,
                                  step.level, step.spending.spent, closing,
                                  decided.p_adjusted, decided.fired))
        if decided.fired:
            fired.append((rule, decided))
    await uow.looks.record(records)
    family = len(powered)
    links = [await _run_ids(uow, r, tested.segments, window) for r, _ in fired]
    return [_alert(r, d, family, window[0], window[1], ids, test=False)
            for (r, d), ids in zip(fired, links, strict=True)]


async def _store(uow: AlertsUnitOfWork, workspace_id: str,
                 alerts: Sequence[StoredAlert]) -> list[StoredAlert]:
    """Store the alerts of rules that have not fired in that period yet, their deliveries and
    events (inside the caller's transaction); the ones stored."""
    channels = [ch.channel_id for ch in await uow.alerts.channels(workspace_id)]
    stored = [alert for alert in alerts if await uow.alerts.add_alert(alert, channels)]
    await uow.outbox.add([raised_event(a) for a in stored])
    return stored


async def evaluate_workspace(uow: LooksUnitOfWork, workspace_id: str,
                             now: datetime) -> Evaluation:
    window = last_closed_week(now)
    after_start = window[1]
    async with uow.read():
        if await uow.alerts.evaluated(workspace_id, after_start):
            return Evaluation(workspace_id, after_start, 0, 0, False)
        tested = await _test(uow, workspace_id, window)
    rules = tested.rules
    async with uow:
        # The close spends what the week's slot looks left of each rule's alpha. Nothing is
        # committed when the week was evaluated meanwhile (by another worker).
        alerts = await _look(uow, workspace_id, tested, domain.CLOSE, closing=True)
        stored = await _store(uow, workspace_id, alerts)
        if not await uow.alerts.record_evaluation(workspace_id, after_start, len(rules),
                                                  len(stored)):
            return Evaluation(workspace_id, after_start, len(rules), 0, False)
        await uow.commit()
    if stored:
        log.info("alerts raised", workspace=workspace_id, period=after_start.isoformat(),
                 rules=len(rules), fired=len(stored))
    return Evaluation(workspace_id, after_start, len(rules), len(stored), True)


def slot_look(schedule_id: str, slot: datetime) -> str:
    """The look id of a schedule slot's evaluation (``alert_looks.look``)."""
    return f"slot:{schedule_id}:{slot.astimezone(UTC).isoformat()}"


async def evaluate_after_slot(cmd: c.EvaluateAfterSlot, uow: LooksUnitOfWork,
                              alert_slot_wait_s: float = SLOT_WAIT_S) -> Evaluation:
    """The workspace's rules on the open week so far against the last closed week, once per
    slot, each held to the share of its alpha this look may spend (module docstring). Raises
    ``SlotRunsPending`` while the slot's runs are still on their way here, up to
    ``alert_slot_wait_s`` after the slot completed."""
    now = cmd.now or datetime.now(UTC)
    window = open_week(cmd.completed_at)
    after_start = window[1]
    async with uow.read():
        if await uow.alerts.slot_evaluated(cmd.workspace_id, cmd.schedule_id, cmd.slot):
            return Evaluation(cmd.workspace_id, after_start, 0, 0, False)
        recorded = await uow.alerts.recorded_runs(cmd.workspace_id, cmd.run_ids) \
            if cmd.run_ids else 0
        missing = len(set(cmd.run_ids)) - recorded
        if missing > 0 and now < cmd.completed_at + timedelta(seconds=alert_slot_wait_s):
            raise SlotRunsPending(f"{missing} of the slot's {len(set(cmd.run_ids))} runs are "
                                  "not classified yet")
        tested = await _test(uow, cmd.workspace_id, window)
    rules = tested.rules
    async with uow:
        alerts = await _look(uow, cmd.workspace_id, tested, slot_look(cmd.schedule_id, cmd.slot),
                             closing=False)
        stored = await _store(uow, cmd.workspace_id, alerts)
        if not await uow.alerts.record_slot_evaluation(
                cmd.workspace_id, cmd.schedule_id, cmd.slot, after_start, recorded, len(rules),
                len(stored)):
            return Evaluation(cmd.workspace_id, after_start, len(rules), 0, False)
        await uow.commit()
    if missing > 0:
        log.warning("slot evaluated without all its runs", workspace=cmd.workspace_id,
                    schedule=cmd.schedule_id, slot=cmd.slot.isoformat(), missing=missing)
    if stored:
        log.info("alerts raised after a slot", workspace=cmd.workspace_id,
                 schedule=cmd.schedule_id, slot=cmd.slot.isoformat(),
                 period=after_start.isoformat(), rules=len(rules), fired=len(stored))
    return Evaluation(cmd.workspace_id, after_start, len(rules), len(stored), True)


async def evaluate_closed_periods(cmd: c.EvaluateClosedPeriods,
                                  new_uow: Callable[[], LooksUnitOfWork]) -> list[Evaluation]:
    if cmd.workspace_id is not None:
        workspaces = [cmd.workspace_id]
    else:
        uow = new_uow()
        async with uow.read():
            workspaces = await uow.alerts.workspaces_with_rules()
    return [await evaluate_workspace(new_uow(), ws, cmd.now) for ws in workspaces]


async def send_test_alert(cmd: c.SendTestAlert, uow: AlertsUnitOfWork) -> tuple[uuid.UUID, int]:
    """The rule's real figures over the last closed week, decided alone (a family of one),
    stored as a test alert and delivered through every channel of the workspace."""
    now = datetime.now(UTC)
    async with uow.read():
        rule = await uow.alerts.get_rule(cmd.workspace_id, cmd.rule_id)
        if rule is None:
            raise NotFound("no such alert rule in this workspace")
        window = last_closed_week(now)
        decisions, segments, _ = await _decide(uow, cmd.workspace_id, [rule], window)
        ids = await _run_ids(uow, rule, segments, window)
    alert = _alert(rule, decisions[0], 1 if decisions[0].p_value is not None else 0,
                   window[0], window[1], ids, test=True)
    async with uow:
        channels = [ch.channel_id for ch in await uow.alerts.channels(cmd.workspace_id)]
        await uow.alerts.add_alert(alert, channels)
        await uow.outbox.add([raised_event(alert)])
        await uow.commit()
    return alert.alert_id, len(channels)


# -- delivery ---------------------------------------------------------------------------------
def _iso_week(start: str) -> str:
    year, week, _ = datetime.fromisoformat(start).isocalendar()
    return f"{year}-W{week:02d}"


def _message_period(period: dict[str, Any]) -> Period:
    value, n = period.get("value"), int(period.get("n") or 0)
    successes = period.get("successes")
    if successes is None:
        successes = 0.0 if value is None else value * n
    low, high = period.get("ci95_low"), period.get("ci95_high")
    if low is None and high is None:
        # A mean outside [0, 1] (the mean position) has no Wilson interval: its interval is the
        # bootstrap over prompts, as in the metrics rows.
        low, high = period.get("by_prompt_ci95_low"), period.get("by_prompt_ci95_high")
    return Period(_iso_week(period["period_start"]), value, successes, n, low, high)


def message_of(alert: StoredAlert, brand_name: str) -> AlertMessage:
    """What the channels say (``domain/notifications.py`` renders it per channel); the runs
    behind the figures as API paths, the after period's first."""
    runs = [*alert.run_ids.get("after", []), *alert.run_ids.get("before", [])]
    return AlertMessage(
        alert_id=str(alert.alert_id), workspace_id=alert.workspace_id,
        rule_id=str(alert.rule_id), brand_id=alert.brand_id, brand_name=brand_name,
        metric=alert.metric, segment={k: str(v).lower() if isinstance(v, bool) else str(v)
                                      for k, v in alert.segment.items()},
        direction=alert.direction, before=_message_period(alert.before),
        after=_message_period(alert.after), p_value=alert.p_value, adjusted_p=alert.p_adjusted,
        run_links=[f"/v1/runs/{run_id}" for run_id in runs], is_test=alert.test,
        raised_at=alert.raised_at)


def channel_of(stored: StoredChannel) -> Channel:
    return Channel(stored.kind, stored.target, stored.secret)  # type: ignore[arg-type]


async def _finish(uow: AlertsUnitOfWork, claimed: ClaimedDelivery, status: str,
                  error: str | None, receipt: str | None, retry_at: datetime | None) -> bool:
    d = claimed.delivery
    async with uow:
        if not await uow.alerts.finish_delivery(d.delivery_id, d.attempts, status, error,
                                                receipt, retry_at):
            return False  # the claim lapsed and another worker took the delivery
        if status == "dead":
            letter = AlertDeliveryDeadLettered(
                delivery_id=d.delivery_id, alert_id=d.alert_id, channel_id=d.channel_id,
                workspace_id=d.workspace_id, kind=claimed.channel.kind, attempts=d.attempts,
                reason=error or "unknown", dead_at=datetime.now(UTC))
            await uow.outbox.add([staged(
                ALERT_DELIVERY_DEAD_LETTERED, str(d.alert_id), letter,
                event_id=uuid.uuid5(uuid.NAMESPACE_URL, f"alert-delivery-dead:{d.delivery_id}"),
                producer=PRODUCER, correlation_id=f"alerts/{d.alert_id}",
                causation_id=str(d.alert_id))])
        await uow.commit()
    return True


async def deliver_one(claimed: ClaimedDelivery, brand_name: str, uow: AlertsUnitOfWork,
                      notifier: Notifier, policy: DeliveryPolicy) -> str:
    """Send one claimed delivery and record the outcome: delivered, failed (to retry) or dead."""
    attempt = claimed.delivery.attempts
    retry_after: float | None = None
    try:
        receipt = await notifier(channel_of(claimed.channel), message_of(claimed.alert, brand_name),
                                 delivery_id=str(claimed.delivery.delivery_id))
    except DeliveryFailed as exc:
        reason, retryable, retry_after = exc.reason, exc.retryable, exc.retry_after_s
    except ValueError as exc:  # the stored channel or alert cannot make a message: permanent
        reason, retryable = f"cannot build the message: {exc}", False
    except Exception as exc:  # noqa: BLE001 - a notifier bug must not kill the worker; retried
        log.warning("alert delivery raised an unexpected error", error=repr(exc))
        reason, retryable = f"unexpected error ({type(exc).__name__})", True
    else:
        await _finish(uow, claimed, "delivered", None, receipt.detail or str(receipt.status), None)
        return "delivered"
    if retryable and attempt < policy.retry.attempts:
        # The platform's backoff (exponential, jittered); a receiver's Retry-After is a floor,
        # capped by the policy's longest delay.
        delay = max(policy.retry.delay(attempt), min(retry_after or 0.0, policy.retry.max_delay_s))
        await _finish(uow, claimed, "failed", reason, None,
                      datetime.now(UTC) + timedelta(seconds=delay))
        return "failed"
    if retryable:
        reason = f"{reason} (gave up after {attempt} attempts)"
    await _finish(uow, claimed, "dead", reason, None, None)
    return "dead"


async def _abandon(claimed: ClaimedDelivery, uow: AlertsUnitOfWork) -> str:
    """A delivery whose channel was deleted after the alert was raised is not sent: dead, with
    the reason, and dead-lettered like any other (the delivery log says why it never went)."""
    await _finish(uow, claimed, "dead", CHANNEL_DELETED, None, None)
    return "dead"


async def deliver_due(cmd: c.DeliverDueAlerts, new_uow: Callable[[], AlertsUnitOfWork],
                      notifier: Notifier | None = None,
                      alert_delivery: DeliveryPolicy = DeliveryPolicy()) -> dict[str, int]:
    if notifier is None:
        raise RuntimeError("no notifier given to bootstrap: alerts cannot be delivered")
    uow = new_uow()
    async with uow:
        claimed = await uow.alerts.claim_deliveries(cmd.limit, alert_delivery.lease_s)
        workspaces = {item.alert.workspace_id for item in claimed}
        brands = await uow.brands.of_workspaces(workspaces)
        names = {key: b.name for key, b in brands.items()}
        live = {ch.channel_id for ws in sorted(workspaces) for ch in await uow.alerts.channels(ws)}
        await uow.commit()
    outcomes = await asyncio.gather(*(
        deliver_one(item, names.get((item.alert.workspace_id, item.alert.brand_id),
                                    item.alert.brand_id), new_uow(), notifier, alert_delivery)
        if item.channel.channel_id in live else _abandon(item, new_uow())
        for item in claimed))
    counts = {"claimed": len(claimed), "delivered": 0, "failed": 0, "dead": 0}
    for outcome in outcomes:
        counts[outcome] += 1
    return counts
