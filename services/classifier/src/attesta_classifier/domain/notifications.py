"""What an alert says on each channel, and how a webhook receiver knows it came from us (issue #25).

Pure: no I/O, no clock, no framework. The adapters (``adapters/notifiers.py``) send what this
module builds; the delivery orchestration decides when, and how often, to try.

Channels
--------
* **webhook**: a JSON body (:func:`webhook_body`, keys in a fixed order, segment keys sorted, so
  a retry of one delivery sends the same bytes) signed like the large payment APIs sign theirs:
  ``Attesta-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the channel's
  secret>`` (:func:`signature_header`), plus ``Attesta-Delivery-Id``, the same on every retry of
  one delivery, so a receiver can drop duplicates (delivery is at least once). The id is also in
  the signed body, so a replayed body cannot pose as a new delivery. A receiver checks with
  :func:`verify_signature`: the timestamp within ``tolerance_s`` of its clock (a captured
  request cannot be replayed later), and the HMAC compared in constant time.
* **slack**: a Slack incoming-webhook payload (:func:`slack_payload`): ``text`` (the fallback
  notifications show) and ``blocks`` in Block Kit's shape (header, section with fields,
  context). Tenant-given text is escaped for Slack's mrkdwn (``&``, ``<``, ``>``), so a brand
  named ``<!channel>`` pings nobody; only absolute http(s) links become links.
* **email**: a subject and a plain-text body, and a small HTML alternative
  (:func:`email_content`); the subject has no line breaks (no header injection).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape as html_escape
from types import MappingProxyType
from typing import Any, Literal
from urllib.parse import urlsplit

from attesta_platform.errors import PermanentError, TransientError

ChannelKind = Literal["webhook", "slack", "email"]
CHANNEL_KINDS: tuple[ChannelKind, ...] = ("webhook", "slack", "email")

SIGNATURE_HEADER = "Attesta-Signature"
DELIVERY_ID_HEADER = "Attesta-Delivery-Id"
SIGNATURE_SCHEME = "v1"
DEFAULT_TOLERANCE_S = 300
BODY_SCHEMA = "attesta.alert.v1"

# Slack's documented limits: a header block's plain text is at most 150 characters, a section
# field's text 2,000, a section has at most 10 fields, a context at most 10 elements.
_SLACK_HEADER_MAX = 150
_SLACK_TEXT_MAX = 2000
_EMAIL = re.compile(r"^[^@\s,;<>\"()\[\]\\]+@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")
_METRIC_LABELS = {"citation_rate": "citation rate", "confabulation_rate": "confabulation rate",
                  "share_of_voice": "share of voice",
                  "source_share_owned": "source share (owned)",
                  "source_share_competitor": "source share (competitor)",
                  "source_share_third_party": "source share (third party)",
                  "position_first": "share named first", "position_mean": "mean position",
                  "position_weighted_visibility": "position-weighted visibility",
                  "score": "score"}
# Metrics that are a share (shown as percentages, with successes/n); the others -- the score,
# the mean position and the position-weighted visibility, means of a per-answer value -- as
# plain numbers with their n.
_RATE_METRICS = frozenset({"citation_rate", "confabulation_rate", "share_of_voice",
                           "source_share_owned", "source_share_competitor",
                           "source_share_third_party", "position_first"})


# ----------------------------------------------------------------------------------- errors

class DeliveryFailed(Exception):
    """A channel did not take the alert. ``reason`` may be shown to the tenant (a status, an
    error class, never the receiver's body nor a resolved address); ``retryable`` says whether
    trying again later can help, ``retry_after_s`` is the receiver's hint (Retry-After) when it
    gave one. The two subclasses carry ``retryable`` in their class as well (the platform's
    ``TransientError``/``PermanentError``), so the shared retry and dead-letter code needs no
    special case."""

    def __init__(self, reason: str, *, retryable: bool, retry_after_s: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        self.status = status


class DeliveryRetryable(DeliveryFailed, TransientError):
    """5xx, 408, 429, a timeout, a refused or reset connection, a name that did not resolve."""

    def __init__(self, reason: str, *, retry_after_s: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(reason, retryable=True, retry_after_s=retry_after_s, status=status)


class DeliveryRefused(DeliveryFailed, PermanentError):
    """Trying again cannot help until someone changes the channel: a 3xx (redirects are not
    followed), another 4xx, a target the outbound policy refuses, an address the mail server
    refuses for good."""

    def __init__(self, reason: str, *, status: int | None = None) -> None:
        super().__init__(reason, retryable=False, status=status)


class SignatureInvalid(Exception):
    """``verify_signature`` refused the request; ``reason`` is one of ``malformed``, ``stale``,
    ``future`` and ``mismatch``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ------------------------------------------------------------------------------- the message

@dataclass(frozen=True)
class Period:
    """One side of the change: the period's label (``2026-W48``, ``2026-11-23..2026-11-29``),
    the metric's value (None when the period had no answer), successes out of n, and the 95%
    interval."""

    label: str
    value: float | None
    successes: float
    n: int
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class AlertMessage:
    """Everything a channel says about one alert. ``run_links`` are URLs (or paths of the web
    app) of the runs behind the figures; ``is_test`` marks "send a test alert"."""

    alert_id: str
    workspace_id: str
    rule_id: str
    brand_id: str
    brand_name: str
    metric: str
    segment: Mapping[str, str]
    direction: str
    before: Period
    after: Period
    p_value: float | None
    adjusted_p: float | None
    run_links: Sequence[str]
    is_test: bool
    raised_at: datetime

    def __post_init__(self) -> None:
        if self.raised_at.tzinfo is None:
            raise ValueError("raised_at must be timezone-aware")
        object.__setattr__(self, "segment",
                           MappingProxyType({str(k): str(v) for k, v in sorted(self.segment.items())}))
        object.__setattr__(self, "run_links", tuple(self.run_links))

    @property
    def change(self) -> float | None:
        if self.before.value is None or self.after.value is None:
            return None
        return self.after.value - self.before.value


@dataclass(frozen=True)
class Channel:
    """Where one alert goes: a webhook URL (with its signing ``secret``), a Slack incoming-webhook
    URL, or an e-mail address. The URL's address is checked by the outbound policy at send time,
    not here (a name's addresses change)."""

    kind: ChannelKind
    target: str
    secret: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in CHANNEL_KINDS:
            raise ValueError(f"channel kind {self.kind!r} not one of {CHANNEL_KINDS}")
        if self.kind == "email":
            if not _EMAIL.fullmatch(self.target):
                raise ValueError("an e-mail channel's target is one address (name@domain)")
            return
        scheme = urlsplit(self.target).scheme.lower()
        if scheme not in ("http", "https") or _CONTROL.search(self.target) or " " in self.target:
            raise ValueError(f"a {self.kind} channel's target is an http(s) URL")
        if self.kind == "webhook" and not self.secret:
            raise ValueError("a webhook channel needs a signing secret")


@dataclass(frozen=True)
class DeliveryReceipt:
    """A channel took the alert: the HTTP status or SMTP reply code, and how long it took."""

    delivery_id: str
    kind: ChannelKind
    status: int
    elapsed_s: float
    detail: str = ""


@dataclass(frozen=True)
class EmailContent:
    subject: str
    text: str
    html: str


# --------------------------------------------------------------------------- formatting

def metric_label(metric: str) -> str:
    return _METRIC_LABELS.get(metric, metric.replace("_", " "))


def format_value(metric: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:.1f}%" if metric in _RATE_METRICS else f"{value:.2f}"


def format_p(p: float | None) -> str:
    if p is None:
        return "n/a"
    return f"{p:.2g}"  # 0.012, 0.0004, 3.1e-07


def _interval(metric: str, period: Period) -> str:
    if period.low is None or period.high is None:
        return "n/a"
    return f"{format_value(metric, period.low)}–{format_value(metric, period.high)}"


def _segment_text(segment: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in segment.items()) or "all answers"


def _one_line(text: str) -> str:
    """No line breaks or control characters (a subject is a header; a Slack header one line)."""
    return " ".join(_CONTROL.sub(" ", text).split())


def _arrow(message: AlertMessage) -> str:
    change = message.change
    if change is None:
        return "changed"
    return "up" if change > 0 else "down" if change < 0 else "unchanged"


def headline(message: AlertMessage) -> str:
    """``Lumora: citation rate down 30.0% → 12.5% (engine=chatgpt)``, with ``[TEST]`` first for
    a test alert; one line."""
    m = message.metric
    text = (f"{message.brand_name}: {metric_label(m)} {_arrow(message)} "
            f"{format_value(m, message.before.value)} → {format_value(m, message.after.value)}")
    if message.segment:
        text += f" ({_segment_text(message.segment)})"
    return _one_line(("[TEST] " if message.is_test else "") + text)


def _count(metric: str, period: Period) -> str:
    """``30/100`` for a share; ``n 40`` for a mean (its sum of values says nothing to a reader)."""
    if metric in _RATE_METRICS:
        return f"{_num(period.successes)}/{period.n}"
    return f"n {period.n}"


def _period_line(metric: str, name: str, period: Period) -> str:
    return (f"{name} ({period.label}): {format_value(metric, period.value)} "
            f"({_count(metric, period)}, 95% interval {_interval(metric, period)})")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def _iso(ts: datetime) -> str:
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z")


# ------------------------------------------------------------------------------- webhook

def _finite(x: float | None) -> float | None:
    # JSON has no NaN or Infinity; a value that is not a number is sent as null.
    return None if x is None or not math.isfinite(x) else x


def _period_json(period: Period) -> dict[str, Any]:
    return {"period": period.label, "value": _finite(period.value),
            "successes": _finite(period.successes), "n": period.n,
            "low": _finite(period.low), "high": _finite(period.high)}


def webhook_body(message: AlertMessage, delivery_id: str) -> bytes:
    """The webhook's JSON body, UTF-8, compact, keys in this fixed order (segment keys sorted):
    the same message and delivery id give the same bytes."""
    doc: dict[str, Any] = {
        "schema": BODY_SCHEMA,
        "type": "alert.test" if message.is_test else "alert.fired",
        "delivery_id": delivery_id,
        "alert_id": message.alert_id,
        "workspace_id": message.workspace_id,
        "rule_id": message.rule_id,
        "brand": {"id": message.brand_id, "name": message.brand_name},
        "metric": message.metric,
        "segment": dict(message.segment),
        "direction": message.direction,
        "before": _period_json(message.before),
        "after": _period_json(message.after),
        "change": _finite(message.change),
        "p_value": _finite(message.p_value),
        "adjusted_p": _finite(message.adjusted_p),
        "run_links": list(message.run_links),
        "is_test": message.is_test,
        "raised_at": _iso(message.raised_at),
    }
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _mac(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def signature_header(secret: str, body: bytes, timestamp: int) -> str:
    """``t=<timestamp>,v1=<hex HMAC-SHA256 of "<timestamp>.<body>">``."""
    return f"t={timestamp},{SIGNATURE_SCHEME}={_mac(secret, timestamp, body)}"


def webhook_headers(secret: str, body: bytes, delivery_id: str, timestamp: int) -> dict[str, str]:
    """The signature, the delivery id, and the same id as ``Idempotency-Key`` (the IETF
    httpapi draft's name) for receivers that already de-duplicate by that header."""
    return {"Content-Type": "application/json", SIGNATURE_HEADER: signature_header(
        secret, body, timestamp), DELIVERY_ID_HEADER: delivery_id, "Idempotency-Key": delivery_id}


def verify_signature(secret: str, header: str, body: bytes, now: float,
                     tolerance_s: float = DEFAULT_TOLERANCE_S) -> int:
    """Check an ``Attesta-Signature`` header against the raw body (the bytes received, before
    any JSON parsing). Returns the signed timestamp; raises :class:`SignatureInvalid` when the
    header is malformed, the timestamp is more than ``tolerance_s`` before (``stale``) or after
    (``future``) ``now``, or no ``v1`` value matches (``mismatch``, compared in constant time).
    Several ``v1`` values are allowed (one per secret while a secret is being rotated)."""
    timestamp: int | None = None
    candidates: list[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            raise SignatureInvalid("malformed")
        if key == "t":
            if not value.isascii() or not value.isdigit() or timestamp is not None:
                raise SignatureInvalid("malformed")
            timestamp = int(value)
        elif key == SIGNATURE_SCHEME:
            candidates.append(value)
    if timestamp is None or not candidates:
        raise SignatureInvalid("malformed")
    if timestamp < now - tolerance_s:
        raise SignatureInvalid("stale")
    if timestamp > now + tolerance_s:
        raise SignatureInvalid("future")
    expected = _mac(secret, timestamp, body)
    # Every candidate is compared (no early exit), each in constant time.
    matched = False
    for candidate in candidates:
        matched |= hmac.compare_digest(expected.encode(), candidate.encode())
    if not matched:
        raise SignatureInvalid("mismatch")
    return timestamp


# --------------------------------------------------------------------------------- slack

def slack_escape(text: str) -> str:
    """Slack's mrkdwn control characters (its documented three), so tenant text stays text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_link(link: str, label: str) -> str:
    parts = urlsplit(link)
    if parts.scheme.lower() in ("http", "https") and parts.netloc and not _CONTROL.search(link):
        # Inside <url|label> a '|' or '>' in the URL would end it early: percent-encode them.
        url = link.replace("|", "%7C").replace(">", "%3E").replace("<", "%3C")
        return f"<{url}|{slack_escape(label)}>"
    return slack_escape(link)


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def slack_payload(message: AlertMessage) -> dict[str, Any]:
    """An incoming-webhook payload: ``text`` (the notification's fallback) and ``blocks``."""
    m = message.metric
    title = headline(message)
    fields = [
        f"*Before* ({slack_escape(message.before.label)})\n{format_value(m, message.before.value)}"
        f" ({_count(m, message.before)}, 95% {_interval(m, message.before)})",
        f"*After* ({slack_escape(message.after.label)})\n{format_value(m, message.after.value)}"
        f" ({_count(m, message.after)}, 95% {_interval(m, message.after)})",
        f"*p-value*\n{format_p(message.p_value)} (adjusted {format_p(message.adjusted_p)})",
        f"*Segment*\n{slack_escape(_segment_text(message.segment))}",
    ]
    links = [_slack_link(link, f"run {i}") for i, link in enumerate(message.run_links[:10], 1)]
    more = len(message.run_links) - len(links)
    runs = ", ".join(links) + (f" and {more} more" if more > 0 else "") if links else "none"
    context = (f"{'Test alert' if message.is_test else 'Alert'} {slack_escape(message.alert_id)}"
               f" · rule {slack_escape(message.rule_id)} · direction "
               f"{slack_escape(message.direction)} · {_iso(message.raised_at)} · runs: {runs}")
    return {
        "text": slack_escape(title),
        "blocks": [
            {"type": "header",
             "text": {"type": "plain_text", "text": _truncate(title, _SLACK_HEADER_MAX)}},
            {"type": "section",
             "text": {"type": "mrkdwn", "text": _truncate(
                 f"*{slack_escape(message.brand_name)}*: {metric_label(m)} {_arrow(message)}",
                 _SLACK_TEXT_MAX)},
             "fields": [{"type": "mrkdwn", "text": _truncate(f, _SLACK_TEXT_MAX)}
                        for f in fields]},
            {"type": "context",
             "elements": [{"type": "mrkdwn", "text": _truncate(context, _SLACK_TEXT_MAX)}]},
        ],
    }


def slack_body(message: AlertMessage) -> bytes:
    return json.dumps(slack_payload(message), ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode()


# --------------------------------------------------------------------------------- email

def email_content(message: AlertMessage) -> EmailContent:
    m = message.metric
    subject = _one_line(f"[Attesta] {headline(message)}")
    lines = [
        headline(message), "",
        f"Brand: {message.brand_name} ({message.brand_id})",
        f"Metric: {metric_label(m)}",
        f"Segment: {_segment_text(message.segment)}",
        f"Direction watched: {message.direction}",
        _period_line(m, "Before", message.before),
        _period_line(m, "After", message.after),
        f"p-value: {format_p(message.p_value)} (adjusted over the rules evaluated together: "
        f"{format_p(message.adjusted_p)})",
        "",
        "Runs behind these figures:" if message.run_links else "Runs behind these figures: none",
        *(f"  {link}" for link in message.run_links),
        "",
        f"Alert {message.alert_id}, rule {message.rule_id}, workspace {message.workspace_id}, "
        f"raised {_iso(message.raised_at)}.",
    ]
    if message.is_test:
        lines += ["", "This is a test alert: no change was detected."]
    text = "\n".join(_CONTROL.sub(" ", line) for line in lines) + "\n"

    def link(url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme.lower() in ("http", "https") and parts.netloc and not _CONTROL.search(url):
            return f'<a href="{html_escape(url, quote=True)}">{html_escape(url)}</a>'
        return html_escape(url)

    rows = "".join(f"<tr><th align=\"left\">{html_escape(k)}</th><td>{html_escape(v)}</td></tr>"
                   for k, v in (("Before", _period_line(m, "", message.before)[1:]),
                                ("After", _period_line(m, "", message.after)[1:]),
                                ("p-value", f"{format_p(message.p_value)} (adjusted "
                                            f"{format_p(message.adjusted_p)})"),
                                ("Segment", _segment_text(message.segment))))
    html = (f"<html><body><h2>{html_escape(headline(message))}</h2><table>{rows}</table>"
            f"<p>Runs: {', '.join(link(u) for u in message.run_links) or 'none'}</p>"
            f"<p><small>Alert {html_escape(message.alert_id)}, rule "
            f"{html_escape(message.rule_id)}, raised {_iso(message.raised_at)}"
            f"{'. Test alert: no change was detected.' if message.is_test else ''}"
            f"</small></p></body></html>")
    return EmailContent(subject=subject, text=text, html=html)
