"""Aggregates per brand, engine and period from the *current* class of each (run, brand).

A pair's bucket is the run's ``answered_at`` (``recorded_at`` when absent), truncated in UTC to
the period (ISO weeks start on Monday). Formulas: ``domain/metrics.py`` and docs/metrics.md.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

import asyncpg

from attesta_classifier.domain import metrics as m

CLASSES = ("STRONG", "DESCRIPTIVE", "ECHO", "CONFABULATED", "ABSENT")


def rate(p: m.Proportion) -> dict[str, Any]:
    return {"value": p.value, "successes": p.successes, "n": p.n, "ci95_low": p.low,
            "ci95_high": p.high}


async def compute(pool: asyncpg.Pool, workspace_id: str, *, period: str, brand_id: str | None,
                  engine: str | None, from_: datetime | None, to: datetime | None) -> list[dict]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT s.brand_id, r.engine, "
            "  date_trunc($2, coalesce(r.answered_at, r.recorded_at), 'UTC') AS bucket, "
            "  s.status, s.citation_class, r.prompt, count(*) AS n "
            "FROM run_brand_status s JOIN runs r ON r.run_id = s.run_id "
            "WHERE s.workspace_id = $1 AND ($3::text IS NULL OR r.engine = $3) "
            "  AND ($4::timestamptz IS NULL OR coalesce(r.answered_at, r.recorded_at) >= $4) "
            "  AND ($5::timestamptz IS NULL OR coalesce(r.answered_at, r.recorded_at) < $5) "
            "GROUP BY 1, 2, 3, 4, 5, 6",
            workspace_id, period, engine, from_, to)
        competitors = {r["brand_id"]: list(r["competitors"]) for r in await conn.fetch(
            "SELECT brand_id, competitors FROM brands WHERE workspace_id = $1", workspace_id)}
    counts: dict[tuple[str, str, datetime], dict[str, int]] = defaultdict(dict)
    other: dict[tuple[str, str, datetime], dict[str, int]] = defaultdict(lambda: {"refused": 0, "pending": 0})
    # Per prompt (its text): (cited pairs, classified pairs), for the prompt-level interval.
    by_prompt: dict[tuple[str, str, datetime], dict[str, list[int]]] = defaultdict(dict)
    for r in rows:
        key = (r["brand_id"], r["engine"], r["bucket"])
        if r["status"] == "classified":
            counts[key][r["citation_class"]] = counts[key].get(r["citation_class"], 0) + r["n"]
            tally = by_prompt[key].setdefault(r["prompt"], [0, 0])
            tally[0] += r["n"] if r["citation_class"] in m.CITED else 0
            tally[1] += r["n"]
        else:
            other[key][r["status"]] += r["n"]
            counts.setdefault(key, {})
    out = []
    previous: dict[tuple[str, str], tuple[datetime, m.Proportion]] = {}
    for (b, e, bucket) in sorted(counts, key=lambda k: (k[2], k[0], k[1])):
        if brand_id is not None and b != brand_id:
            continue
        c = counts[(b, e, bucket)]
        cr = m.citation_rate(c)
        change = None
        if (b, e) in previous:
            prev_start, prev = previous[(b, e)]
            overlap = m.intervals_overlap(cr, prev)
            change = {"previous_period_start": prev_start, "previous_value": prev.value,
                      "delta": (cr.value - prev.value) if None not in (cr.value, prev.value)
                      else None,  # type: ignore[operator]
                      "significant": None if overlap is None else not overlap}
        if cr.n:
            previous[(b, e)] = (bucket, cr)
        pb = m.prompt_bootstrap([(s, n) for s, n in by_prompt[(b, e, bucket)].values()])
        rivals = [counts.get((x, e, bucket), {}) for x in competitors.get(b, [])]
        out.append({
            "brand_id": b, "engine": e, "period_start": bucket, "n": m.classified(c),
            "counts": {k: c.get(k, 0) for k in CLASSES},
            "refused": other[(b, e, bucket)]["refused"], "pending": other[(b, e, bucket)]["pending"],
            "citation_rate": rate(cr),
            "share_of_voice": rate(m.share_of_voice(c, rivals)),
            "confabulation_rate": rate(m.confabulation_rate(c)),
            "echo_rate": rate(m.echo_rate(c)), "absent_rate": rate(m.absent_rate(c)),
            "score": rate(m.score(c)),
            "citation_rate_by_prompt": {"value": pb.value, "n": pb.n,
                                        "prompts": len(by_prompt[(b, e, bucket)]),
                                        "ci95_low": pb.low, "ci95_high": pb.high},
            "citation_rate_change": change,
        })
    return out
