"""Aggregates per brand, period and the chosen dimensions from the *current* class of each
(run, brand).

A pair's bucket is the run's ``answered_at`` (``recorded_at`` when absent), truncated in UTC to
the period (ISO weeks start on Monday). Rows are keyed by brand, period and ``group_by``: any of
``engine`` (the default), ``topic``/``persona``/``funnel`` (the collector's prompt tags, carried
on the run) and ``branded`` (the prompt names a tracked brand of the workspace). A dimension not
in ``group_by`` is summed over: without ``engine``, a row is all engines together.
Formulas: ``domain/metrics.py`` and docs/metrics.md.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from attesta_classifier.domain import metrics as m
from attesta_classifier.domain.commands import GetMetrics
from attesta_classifier.service_layer.unit_of_work import Tally, UnitOfWork
from attesta_platform.brandmatch import names_brand
from attesta_platform.cited_sources import SourceLabel, brand_hosts, source_label

CLASSES = ("STRONG", "DESCRIPTIVE", "ECHO", "CONFABULATED", "ABSENT")
DIMENSIONS = ("engine", "topic", "persona", "funnel", "branded")
TOP_DOMAINS = 10
Values = tuple[Any, ...]  # a row's values of the group_by dimensions


def rate(p: m.Proportion) -> dict[str, Any]:
    return {"value": p.value, "successes": p.successes, "n": p.n, "ci95_low": p.low,
            "ci95_high": p.high}


def prompt_rate(p: m.Proportion, prompts: int) -> dict[str, Any]:
    return {"value": p.value, "n": p.n, "prompts": prompts, "ci95_low": p.low, "ci95_high": p.high}


class _Bucket:
    """Everything one row needs, accumulated from the grouped query's rows."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.refused = self.pending = 0
        self.cited_by_prompt: dict[str, list[int]] = {}  # prompt -> [cited, classified]
        self.answers = 0  # every (run, brand) pair, whatever its status: sources need no class
        self.labelled_by_prompt: dict[str, dict[str, list[int]]] = {}  # prompt -> label -> [hits, n]
        self.domains: Counter[str] = Counter()
        self.domain_label: dict[str, str] = {}


async def compute(query: GetMetrics, uow: UnitOfWork) -> list[dict[str, Any]]:
    group_by, brand_id = query.group_by, query.brand_id
    unknown = [d for d in group_by if d not in DIMENSIONS]
    if unknown:
        raise ValueError(f"cannot group by {', '.join(unknown)}")
    async with uow.read():
        rows = await uow.decisions.tallies(query.workspace_id, query.period, query.engine,
                                           query.from_, query.to)
        brands = {b.brand_id: b for b in await uow.brands.list(query.workspace_id)}
    hosts = {b: brand_hosts(r.domains) for b, r in brands.items()}
    competitors = {b: list(r.competitors) for b, r in brands.items()}
    branded: dict[str, bool] = {}  # prompt -> names a tracked brand of the workspace
    labels: dict[tuple[str, str], str] = {}  # (brand, host) -> owned/competitor/third_party

    def is_branded(prompt: str) -> bool:
        if prompt not in branded:
            branded[prompt] = any(names_brand(prompt, r.names, hosts[b])
                                  for b, r in brands.items())
        return branded[prompt]

    def label(brand: str, host: str) -> str:
        if (brand, host) not in labels:
            labels[(brand, host)] = source_label(
                host, hosts.get(brand, ()),
                (hosts[c] for c in competitors.get(brand, []) if c in hosts)).value
        return labels[(brand, host)]

    def dims(r: Tally) -> Values:
        return tuple(is_branded(r.prompt) if d == "branded" else getattr(r, d) for d in group_by)

    buckets: dict[tuple[str, Values, datetime], _Bucket] = defaultdict(_Bucket)
    for r in rows:
        key = (r.brand_id, dims(r), r.bucket)
        b = buckets[key]
        n, prompt = r.n, r.prompt
        if r.status == "classified":
            assert r.citation_class is not None
            b.counts[r.citation_class] = b.counts.get(r.citation_class, 0) + n
            tally = b.cited_by_prompt.setdefault(prompt, [0, 0])
            tally[0] += n if r.citation_class in m.CITED else 0
            tally[1] += n
        elif r.status in ("refused", "pending"):
            setattr(b, r.status, getattr(b, r.status) + n)
        b.answers += n
        seen_labels, seen_domains = set(), set()
        for place in r.cited:
            host, _, domain = place.partition(" ")
            lab = label(r.brand_id, host)
            seen_labels.add(lab)
            if domain not in seen_domains:
                seen_domains.add(domain)
                b.domains[domain] += n
                b.domain_label.setdefault(domain, lab)
        per_label = b.labelled_by_prompt.setdefault(prompt, {})
        for lab in SourceLabel:
            t = per_label.setdefault(lab.value, [0, 0])
            t[0] += n if lab.value in seen_labels else 0
            t[1] += n

    out = []
    previous: dict[tuple[str, Values], tuple[datetime, m.Proportion]] = {}
    for (brand, values, bucket) in sorted(buckets, key=lambda k: (k[2], k[0], _sortable(k[1]))):
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
        rivals: list[Mapping[str, int]] = [buckets[k].counts for k in ((c, values, bucket) for c in competitors.get(brand, []))
                  if k in buckets]
        group = dict(zip(group_by, values, strict=True))
        out.append({
            "brand_id": brand, "engine": group.get("engine"), "period_start": bucket,
            "topic": group.get("topic"), "persona": group.get("persona"),
            "funnel": group.get("funnel"), "branded": group.get("branded"),
            "n": m.classified(b.counts), "counts": {k: b.counts.get(k, 0) for k in CLASSES},
            "refused": b.refused, "pending": b.pending,
            "citation_rate": rate(cr),
            "share_of_voice": rate(m.share_of_voice(b.counts, rivals)),
            "confabulation_rate": rate(m.confabulation_rate(b.counts)),
            "echo_rate": rate(m.echo_rate(b.counts)), "absent_rate": rate(m.absent_rate(b.counts)),
            "score": rate(m.score(b.counts)),
            "citation_rate_by_prompt": prompt_rate(
                m.prompt_bootstrap([(s, n) for s, n in b.cited_by_prompt.values()]),
                len(b.cited_by_prompt)),
            "citation_rate_change": change,
            "source_share": _source_share(b),
            "top_domains": [{"domain": d, "answers": k, "label": b.domain_label[d]}
                            for d, k in sorted(b.domains.items(),
                                               key=lambda x: (-x[1], x[0]))[:TOP_DOMAINS]],
        })
    return out


def _source_share(b: _Bucket) -> dict[str, Any]:
    """Per label, the share of answers citing at least one such source, with Wilson over
    answers and the bootstrap over prompts."""
    share: dict[str, Any] = {"answers": b.answers, "prompts": len(b.labelled_by_prompt)}
    for lab in SourceLabel:
        per_prompt = [t[lab.value] for t in b.labelled_by_prompt.values()]
        hits = sum(h for h, _ in per_prompt)
        share[lab.value] = {**rate(m.wilson(hits, b.answers)),
                            "by_prompt": prompt_rate(m.prompt_bootstrap(
                                [(h, n) for h, n in per_prompt]), len(per_prompt))}
    return share


def _sortable(values: Values) -> tuple[tuple[bool, str], ...]:
    """None sorts first, booleans and text in their own order."""
    return tuple((v is not None, str(v)) for v in values)
