"""Aggregates per brand, period and the chosen dimensions from the *current* class of each
(run, brand).

A pair's bucket is the run's ``answered_at`` (``recorded_at`` when absent), truncated in UTC to
the period (ISO weeks start on Monday). Rows are keyed by brand, period and ``group_by``: any of
``engine`` (the default), ``topic``/``persona``/``funnel`` (the collector's prompt tags, carried
on the run) and ``branded`` (the prompt names a tracked brand of the workspace). A dimension not
in ``group_by`` is summed over: without ``engine``, a row is all engines together. The segment
filters (engine, tags, branded) keep only the pairs of that segment, so a row is exactly the
figure of the segment the web app shows; ``totals`` are the same figures over the whole window.
Formulas: ``domain/metrics.py`` and docs/metrics.md.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from attesta_classifier.domain import metrics as m
from attesta_classifier.domain.position import weight
from attesta_classifier.domain.commands import ANY_METHOD, GetMetrics
from attesta_classifier.service_layer.unit_of_work import StoredBrand, Tally, UnitOfWork
from attesta_platform.brandmatch import names_brand
from attesta_platform.cited_sources import SourceLabel, brand_hosts, source_label

CLASSES = ("STRONG", "DESCRIPTIVE", "ECHO", "CONFABULATED", "ABSENT")
DIMENSIONS = ("engine", "topic", "persona", "funnel", "branded")
# Segments a form can offer besides the dimensions (issue #25): the run's source (the
# assistant's ad-hoc chats are one) and how its answer was collected.
SEGMENT_ONLY = ("source", "collection_method")
METHOD = "collection_method"
CHATS = "assistant"  # the source of our assistant's ad-hoc chats: not in headline figures
TOP_DOMAINS = 10
Values = tuple[Any, ...]  # a row's values of the group_by dimensions


@dataclass(frozen=True)
class MetricsReport:
    """The rows per period, the same per (brand, group) over the window, the values each
    dimension takes in the window (before the segment filters), and the minimum sample."""

    rows: list[dict[str, Any]]
    totals: list[dict[str, Any]]
    segment_values: dict[str, list[str]]
    min_n: int
    min_prompts: int
    build_changes: list[dict[str, Any]]


@dataclass(frozen=True)
class _Minimum:
    n: int
    prompts: int

    def rate(self, p: m.Proportion, prompts: int) -> dict[str, Any]:
        return {"value": p.value, "successes": p.successes, "n": p.n, "ci95_low": p.low,
                "ci95_high": p.high,
                "underpowered": m.underpowered(p.n, prompts, self.n, self.prompts)}

    def prompt_rate(self, p: m.Proportion, prompts: int) -> dict[str, Any]:
        return {"value": p.value, "n": p.n, "prompts": prompts, "ci95_low": p.low,
                "ci95_high": p.high,
                "underpowered": m.underpowered(p.n, prompts, self.n, self.prompts)}


class Bucket:
    """Everything one row needs, accumulated from the grouped query's rows (``add_tally``).
    The alerts read the same buckets (``prompt_counts``, ``prompt_sums``), so a rule watches the
    figure the metrics API serves."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.refused = self.pending = 0
        self.by_prompt: dict[str, Counter[str]] = {}  # prompt -> current class -> pairs
        self.answers = 0  # every (run, brand) pair, whatever its status: sources need no class
        self.labelled_by_prompt: dict[str, dict[str, list[int]]] = {}  # prompt -> label -> [hits, n]
        self.domains: Counter[str] = Counter()
        self.domain_label: dict[str, str] = {}
        # prompt -> [answers with a position, answers naming the brand, sum of places,
        #            answers naming it first, sum of position weights, sum of squared places,
        #            sum of squared position weights (the alerts' test of the weighted
        #            visibility needs each prompt's variance)]
        self.positions: dict[str, list[float]] = {}

    def prompts_where(self, counted: tuple[str, ...]) -> set[str]:
        """The prompts with at least one pair of these classes."""
        return {p for p, k in self.by_prompt.items() if any(k[c] for c in counted)}


class SourceLabels:
    """Labels each place a run cites for a brand (owned, competitor or third_party), with the
    brands' current domains and competitors; each (brand, host) decided once."""

    def __init__(self, brands: Iterable[StoredBrand]) -> None:
        known = list(brands)
        self._hosts = {b.brand_id: brand_hosts(b.domains) for b in known}
        self._competitors = {b.brand_id: list(b.competitors) for b in known}
        self._labels: dict[tuple[str, str], str] = {}

    def label(self, brand: str, host: str) -> str:
        if (brand, host) not in self._labels:
            self._labels[(brand, host)] = source_label(
                host, self._hosts.get(brand, ()),
                (self._hosts[c] for c in self._competitors.get(brand, [])
                 if c in self._hosts)).value
        return self._labels[(brand, host)]

    def cited(self, r: Tally) -> list[tuple[str, str]]:
        """(label, registered domain) of each place the tally row's runs cite."""
        return [(self.label(r.brand_id, host), domain) for host, _, domain in
                (place.partition(" ") for place in r.cited)]


async def compute(query: GetMetrics, uow: UnitOfWork, metrics_min_n: int = m.DEFAULT_MIN_N,
                  metrics_min_prompts: int = m.DEFAULT_MIN_PROMPTS) -> MetricsReport:
    group_by, brand_id = query.group_by, query.brand_id
    unknown = [d for d in group_by if d not in DIMENSIONS]
    if unknown:
        raise ValueError(f"cannot group by {', '.join(unknown)}")
    minimum = _Minimum(metrics_min_n, metrics_min_prompts)
    async with uow.read():
        # Every engine: the engine filter is applied below, with the others, so the values an
        # engine can take are known too (what the web app's form offers).
        # The chats too: whether they count is decided below with the other segments, so the
        # sources a form can offer are known.
        rows = await uow.decisions.tallies(query.workspace_id, query.period, None,
                                           query.from_, query.to, include_chats=True)
        brands = {b.brand_id: b for b in await uow.brands.list(query.workspace_id)}
        builds = await uow.runs.builds(query.workspace_id, query.engine, query.from_, query.to)
    hosts = {b: brand_hosts(r.domains) for b, r in brands.items()}
    competitors = {b: list(r.competitors) for b, r in brands.items()}
    branded: dict[str, bool] = {}  # prompt -> names a tracked brand of the workspace
    labels = SourceLabels(brands.values())

    def is_branded(prompt: str) -> bool:
        if prompt not in branded:
            branded[prompt] = any(names_brand(prompt, r.names, hosts[b])
                                  for b, r in brands.items())
        return branded[prompt]

    def value(r: Tally, d: str) -> Any:
        return is_branded(r.prompt) if d == "branded" else getattr(r, d)

    # What each dimension takes in the window, for the brand asked about (all: every brand).
    seen: dict[str, set[str]] = {d: set() for d in (*DIMENSIONS, *SEGMENT_ONLY)}
    for r in rows:
        if brand_id is None or r.brand_id == brand_id:
            for d in seen:
                v = value(r, d)
                if v is not None:
                    seen[d].add(str(v).lower() if isinstance(v, bool) else v)
    segment = {"engine": query.engine, "topic": query.topic, "persona": query.persona,
               "funnel": query.funnel, "branded": query.branded, "source": query.source,
               METHOD: None if query.collection_method == ANY_METHOD else query.collection_method}
    wanted = {d: v for d, v in segment.items() if v is not None}
    rows = [r for r in rows if all(value(r, d) == v for d, v in wanted.items())
            # Ad-hoc chats only when asked for: include_chats, or source=assistant.
            and (query.include_chats or query.source is not None or r.source != CHATS)]

    # Answers collected differently (plain API, grounded, our assistant) share almost nothing:
    # rows are split by collection method unless the caller asks for every method together.
    keys = group_by if query.collection_method == ANY_METHOD else (*group_by, METHOD)
    buckets: dict[tuple[str, Values, datetime], Bucket] = defaultdict(Bucket)
    totals: dict[tuple[str, Values], Bucket] = defaultdict(Bucket)
    for r in rows:
        key = tuple(value(r, d) for d in keys)
        cited = labels.cited(r)
        for b in (buckets[(r.brand_id, key, r.bucket)], totals[(r.brand_id, key)]):
            add_tally(b, r, cited)

    out = []
    previous: dict[tuple[str, Values], tuple[datetime, m.Proportion]] = {}
    first: dict[tuple[str, Values], datetime] = {}
    for (brand, values, bucket) in sorted(buckets, key=lambda k: (k[2], k[0], _sortable(k[1]))):
        first.setdefault((brand, values), bucket)
        if brand_id is not None and brand != brand_id:
            continue
        b = buckets[(brand, values, bucket)]
        cr = m.citation_rate(b.counts)
        change = None
        if (brand, values) in previous:
            prev_start, prev = previous[(brand, values)]
            overlap = m.intervals_overlap(cr, prev)
            change = {"previous_period_start": prev_start, "previous_value": prev.value,
                      "delta": None if cr.value is None or prev.value is None
                      else cr.value - prev.value,
                      "significant": None if overlap is None else not overlap}
        if cr.n:
            previous[(brand, values)] = (bucket, cr)
        rivals = [buckets[k] for k in ((c, values, bucket) for c in competitors.get(brand, []))
                  if k in buckets]
        out.append(_row(brand, keys, values, bucket, b, rivals, change, minimum))
    whole = [_row(brand, keys, values, first[(brand, values)], b,
                  [totals[(c, values)] for c in competitors.get(brand, []) if (c, values) in totals],
                  None, minimum)
             for (brand, values), b in sorted(totals.items(), key=lambda kv: (
                 kv[0][0], _sortable(kv[0][1])))
             if brand_id is None or brand == brand_id]
    changes = [{"engine": e, "day": day, "model_build": _build(b), "previous": _build(p)}
               for e, day, b, p in m.build_changes(
                   (d.engine, d.day, (d.model, d.system_fingerprint), d.n) for d in builds)]
    return MetricsReport(out, whole, {d: sorted(v) for d, v in seen.items()},
                         minimum.n, minimum.prompts, changes)


def _build(b: m.Build) -> dict[str, str | None]:
    return {"model": b[0], "system_fingerprint": b[1]}


def add_tally(b: Bucket, r: Tally, cited: list[tuple[str, str]]) -> None:
    n, prompt = r.n, r.prompt
    if r.status == "classified":
        assert r.citation_class is not None
        b.counts[r.citation_class] = b.counts.get(r.citation_class, 0) + n
        b.by_prompt.setdefault(prompt, Counter())[r.citation_class] += n
    elif r.status in ("refused", "pending"):
        setattr(b, r.status, getattr(b, r.status) + n)
    b.answers += n
    seen_labels, seen_domains = set(), set()
    for lab, domain in cited:
        seen_labels.add(lab)
        if domain not in seen_domains:
            seen_domains.add(domain)
            b.domains[domain] += n
            b.domain_label.setdefault(domain, lab)
    if r.status == "classified" and r.positioned:
        p = b.positions.setdefault(prompt, [0, 0, 0, 0, 0.0, 0, 0.0])
        p[0] += n
        if r.position is not None:
            p[1] += n
            p[2] += r.position * n
            p[3] += n if r.position == 1 else 0
            p[5] += r.position * r.position * n
        w = weight(r.position)
        p[4] += w * n
        p[6] += w * w * n
    per_label = b.labelled_by_prompt.setdefault(prompt, {})
    for source in SourceLabel:
        t = per_label.setdefault(source.value, [0, 0])
        t[0] += n if source.value in seen_labels else 0
        t[1] += n


def _row(brand: str, group_by: tuple[str, ...], values: Values, bucket: datetime, b: Bucket,
         rivals: list[Bucket], change: dict[str, Any] | None,
         minimum: _Minimum) -> dict[str, Any]:
    """One row: every figure with its Wilson interval and whether its cell is underpowered (its
    own n, and the distinct prompts that count in that n)."""
    group = dict(zip(group_by, values, strict=True))
    cr = m.citation_rate(b.counts)
    prompts = len(b.prompts_where(CLASSES))
    mentioned = len(b.prompts_where(tuple(c for c in CLASSES if c != "ABSENT")))
    voiced = len(set().union(b.prompts_where(m.CITED),
                             *(r.prompts_where(m.CITED) for r in rivals)))
    cited_by_prompt = [(sum(k[c] for c in m.CITED), sum(k.values()))
                       for k in b.by_prompt.values()]
    return {
        "brand_id": brand, "engine": group.get("engine"), "period_start": bucket,
        "topic": group.get("topic"), "persona": group.get("persona"),
        "funnel": group.get("funnel"), "branded": group.get("branded"),
        METHOD: group.get(METHOD),
        "n": m.classified(b.counts), "counts": {k: b.counts.get(k, 0) for k in CLASSES},
        "refused": b.refused, "pending": b.pending,
        "prompts": prompts,
        "underpowered": m.underpowered(cr.n, prompts, minimum.n, minimum.prompts),
        "citation_rate": minimum.rate(cr, prompts),
        "share_of_voice": minimum.rate(
            m.share_of_voice(b.counts, [r.counts for r in rivals]), voiced),
        "confabulation_rate": minimum.rate(m.confabulation_rate(b.counts), mentioned),
        "echo_rate": minimum.rate(m.echo_rate(b.counts), prompts),
        "absent_rate": minimum.rate(m.absent_rate(b.counts), prompts),
        "score": minimum.rate(m.score(b.counts), prompts),
        "citation_rate_by_prompt": minimum.prompt_rate(m.prompt_bootstrap(cited_by_prompt),
                                                       prompts),
        "citation_rate_change": change,
        "source_share": _source_share(b, minimum),
        "position": _position(b, minimum),
        "top_domains": [{"domain": d, "answers": k, "label": b.domain_label[d]}
                        for d, k in sorted(b.domains.items(),
                                           key=lambda x: (-x[1], x[0]))[:TOP_DOMAINS]],
    }


def _source_share(b: Bucket, minimum: _Minimum) -> dict[str, Any]:
    """Per label, the share of answers citing at least one such source, with Wilson over
    answers and the bootstrap over prompts."""
    prompts = len(b.labelled_by_prompt)
    share: dict[str, Any] = {"answers": b.answers, "prompts": prompts}
    for lab in SourceLabel:
        per_prompt = [t[lab.value] for t in b.labelled_by_prompt.values()]
        hits = sum(h for h, _ in per_prompt)
        share[lab.value] = {**minimum.rate(m.wilson(hits, b.answers), prompts),
                            "by_prompt": minimum.prompt_rate(m.prompt_bootstrap(
                                [(h, n) for h, n in per_prompt]), prompts)}
    return share


def _position(b: Bucket, minimum: _Minimum) -> dict[str, Any]:
    """Mean place where named (bootstrap over prompts), share named first (Wilson) and the
    position-weighted visibility (bootstrap over prompts), each with its n and prompts, over the
    classified answers whose position was computed (docs/metrics.md "Position")."""
    per_prompt = b.positions.values()
    answers = int(sum(p[0] for p in per_prompt))
    named = int(sum(p[1] for p in per_prompt))
    prompts = sum(1 for p in per_prompt if p[0])
    named_prompts = sum(1 for p in per_prompt if p[1])
    return {
        "answers": answers, "named": named, "prompts": prompts,
        "mean": minimum.prompt_rate(m.mean_position([(p[2], int(p[1])) for p in per_prompt]),
                                    named_prompts),
        "first": minimum.rate(m.first_position_share(int(sum(p[3] for p in per_prompt)),
                                                     answers), prompts),
        "weighted_visibility": minimum.prompt_rate(
            m.weighted_visibility([(p[4], int(p[0])) for p in per_prompt]), prompts),
    }


# -- the figures of one bucket per prompt, for the alerts (docs/alerts.md) ----------------------

PromptCounts = dict[str, tuple[int, int]]  # prompt -> (successes, trials)
PromptSums = dict[str, tuple[float, float, int]]  # prompt -> (sum, sum of squares, answers)


def prompt_counts(metric: str, b: Bucket, rivals: list[Bucket]) -> PromptCounts:
    """A proportion of ``_row`` per prompt, from the same bucket: what counts as a success and
    as a trial is the figure's own (docs/metrics.md). ``rivals``: the competitors' buckets of the
    same segment (share of voice)."""
    if metric == "citation_rate":
        return {p: (m.cited(k), m.classified(k)) for p, k in b.by_prompt.items()}
    if metric == "confabulation_rate":
        return {p: (k["CONFABULATED"], m.classified(k) - k["ABSENT"])
                for p, k in b.by_prompt.items()}
    if metric == "share_of_voice":
        out: dict[str, list[int]] = {}
        for bucket, own in ((b, True), *((r, False) for r in rivals)):
            for p, k in bucket.by_prompt.items():
                t = out.setdefault(p, [0, 0])
                t[0] += m.cited(k) if own else 0
                t[1] += m.cited(k)
        return {p: (s, n) for p, (s, n) in out.items()}
    if metric.startswith("source_share_"):
        lab = SourceLabel(metric.removeprefix("source_share_")).value
        return {p: (t[lab][0], t[lab][1]) for p, t in b.labelled_by_prompt.items()}
    if metric == "position_first":
        return {p: (int(x[3]), int(x[0])) for p, x in b.positions.items()}
    raise ValueError(f"{metric!r} is not a proportion of the metrics")


def prompt_sums(metric: str, b: Bucket) -> PromptSums:
    """A mean of ``_row`` per prompt, from the same bucket: (sum, sum of squares, answers) of
    the per-answer values (the score's class weight; the place where the brand is named; the
    position weight of each answer with a position)."""
    if metric == "score":
        return {p: (sum(m.SCORE_WEIGHTS.get(c, 0.0) * k[c] for c in k),
                    sum(m.SCORE_WEIGHTS.get(c, 0.0) ** 2 * k[c] for c in k), m.classified(k))
                for p, k in b.by_prompt.items()}
    if metric == "position_mean":
        return {p: (x[2], x[5], int(x[1])) for p, x in b.positions.items()}
    if metric == "position_weighted_visibility":
        return {p: (x[4], x[6], int(x[0])) for p, x in b.positions.items()}
    raise ValueError(f"{metric!r} is not a mean of the metrics")


def _sortable(values: Values) -> tuple[tuple[bool, str], ...]:
    """None sorts first, booleans and text in their own order."""
    return tuple((v is not None, str(v)) for v in values)
