"""Alert evaluation time through the real database (issue #25's benchmark): 1,000 rules over
90 days of daily answers, evaluated the way the classifier's evaluator does it, every metric a
rule can watch.

A fresh migrated classifier database gets, written directly (COPY, not through Kafka):

- ``--rules / 10`` brands, each with a domain of its own and the next two brands as its
  competitors, and 3-30 prompts of its own (a third name the brand, so the ``branded`` segment
  splits them; each has one of three topic tags);
- every day of ``--days``, 0-2 answers per prompt (one of two engines, collected by the plain
  API or the API with web search), each classified for its brand and its two competitors. The
  brand is cited with the prompt's rate (Beta(2, 5), mean 0.29); otherwise 30% ECHO, 10%
  CONFABULATED, the rest ABSENT; each competitor is cited in 20% of the answers. Each answer
  names the brands in an order (``named_order``/``position``: the brand first with the
  citation rate's chance, else second or third, or not at all when ABSENT) and cites 0-2
  sources (the brand's own site, a competitor's, a third party's). A tenth of the brands move
  by +0.20 from a random day, so some rules fire.

Ten rules per brand, one per metric (``domain.alerts.METRICS``: citation and confabulation
rate, share of voice, the three source shares, share named first, mean position, the
position-weighted visibility, the score), each on one of the segments {all answers, engine
chatgpt, engine gemini, tag pricing, unbranded prompts, collected with web search} in turn, so
every metric meets every segment across the brands; through the bus (``CreateAlertRule``).

Timed: ``EvaluateClosedPeriods(now)``, the evaluator's own step, for the last ``--closes`` (4)
weekly closes inside the data (each close evaluated once, as in production: the week's tallies
from PostgreSQL, the cells, the prompt-unit tests, Benjamini-Hochberg, both periods' intervals,
each rule's look at the week (the close spends what is left of its alpha), the fired alerts and
their events written). Then two slot looks at the last, open week (``EvaluateAfterSlot``: the
same work on the open week so far, each rule's look held to its share of alpha). Also timed
apart: the tallies query alone for one close.

    flock /tmp/attesta-heavy.lock .venv/bin/python benchmarks/alert_evaluation.py
        [--rules 1000] [--days 90] [--seed 20261205] [--closes 4]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial
from urllib.parse import urlsplit

from attesta_classifier.adapters.alerts_postgres import AlertingUnitOfWork
from attesta_classifier.adapters.migrate import migrate
from attesta_classifier.adapters.postgres import ClassifierUnitOfWork, create_pool
from attesta_classifier.bootstrap import build_bus, build_heuristic
from attesta_classifier.domain import alert_commands as a
from attesta_classifier.domain.alerts import METRICS
from attesta_classifier.domain.commands import CreateBrand, UpdateBrand
from attesta_classifier.service_layer.alerting import last_closed_week
from attesta_platform.outbound import OutboundPolicy
from attesta_platform.settings import app_database_url
from attesta_testing.infra import temp_database

ROLE, PASSWORD = "attesta_classifier_app", "attesta-classifier-dev-only"
WORKSPACE = "bench"
ENGINES = ("chatgpt", "gemini")
TOPICS = ("pricing", "safety", "dosage")
SEGMENTS = ({}, {"engine": "chatgpt"}, {"engine": "gemini"}, {"tag": "pricing"},
            {"branded": False}, {"collection_method": "api_with_search"})
METHODS = ("api", "api_with_search")
# A Monday: the data's days start here, so its weeks are whole ISO weeks.
START = datetime(2026, 6, 1, tzinfo=UTC)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def domain_of(name: str) -> str:
    return f"{name.lower()}.example"


def seed_rows(brands: list[tuple[str, str]], days: int, rng: random.Random
              ) -> tuple[list[tuple], list[tuple]]:
    """(runs rows, run_brand_status rows) for the data described above."""
    runs: list[tuple] = []
    states: list[tuple] = []
    for b, (brand_id, name) in enumerate(brands):
        rivals = [brands[(b + i) % len(brands)] for i in (1, 2)]
        prompts = []
        for p in range(rng.randint(3, 30)):
            branded = p % 3 == 0
            text = (f"Is {name} a good choice for need {p}?" if branded
                    else f"Which supplier is best for need {p} of category {b}?")
            prompts.append((text, TOPICS[p % 3], rng.betavariate(2, 5)))
        change_day = rng.randrange(days) if b % 10 == 0 else None
        for day in range(days):
            shift = 0.2 if change_day is not None and day >= change_day else 0.0
            for text, topic, rate in prompts:
                for k in range(rng.choice((0, 1, 2))):
                    run_id = f"run-{uuid.uuid4().hex}"
                    answer = f"answer {run_id}"
                    at = START + timedelta(days=day, hours=8 + k, minutes=rng.randrange(60))
                    cited_rate = min(1.0, rate + shift)
                    if rng.random() < cited_rate:
                        own = rng.choice(("STRONG", "DESCRIPTIVE"))
                    else:
                        u = rng.random()
                        own = "ECHO" if u < 0.3 else "CONFABULATED" if u < 0.4 else "ABSENT"
                    others = [(rid, "DESCRIPTIVE" if rng.random() < 0.2 else "ABSENT")
                              for rid, _ in rivals]
                    # The order the answer names the brands in: the brand first with the
                    # citation rate's chance, else after one or both competitors (not named at
                    # all when ABSENT); competitors named when cited.
                    named = [rid for rid, cls in others if cls != "ABSENT"]
                    if own != "ABSENT":
                        place = 0 if rng.random() < cited_rate else rng.randint(1, len(named)) \
                            if named else 0
                        named.insert(place, brand_id)
                    sources = [{"host": f"www.{d}", "domain": d} for d in rng.sample(
                        [domain_of(name), domain_of(rivals[0][1]), "encyclopedia.example"],
                        rng.choice((0, 1, 2)))]
                    runs.append((run_id, WORKSPACE, rng.choice(ENGINES), "model-x", text, answer,
                                 hashlib.sha256(answer.encode()).hexdigest(), at,
                                 json.dumps({"topic": topic}), json.dumps(sources),
                                 rng.choice(METHODS)))
                    for other, cls in ((brand_id, own), *others):
                        position = named.index(other) + 1 if other in named else None
                        states.append((run_id, other, WORKSPACE, "classified", uuid.uuid4(), cls,
                                       "deterministic", position, named))
    return runs, states


async def main(rules: int, days: int, seed: int, n_closes: int) -> None:
    rng = random.Random(seed)
    n_brands = max(3, -(-rules // len(METRICS)))
    print(f"load at start (1/5/15 min): {load()}")
    async with temp_database("alertevalbench") as admin_url:
        name = urlsplit(admin_url).path.lstrip("/")
        await migrate(admin_url, name, ROLE, PASSWORD)
        pool = await create_pool(app_database_url(admin_url, name, ROLE, PASSWORD), 6)
        try:
            bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=build_heuristic(),
                            alert_outbound=OutboundPolicy())
            brands = [(f"brand-{i:03d}", f"Quorvex{i:03d}") for i in range(n_brands)]
            for brand_id, brand_name in brands:
                await bus.handle(CreateBrand(WORKSPACE, brand_name, brand_id,
                                             domains=(domain_of(brand_name),)))
            for b, (brand_id, _) in enumerate(brands):  # competitors must exist first
                await bus.handle(UpdateBrand(WORKSPACE, brand_id, competitors=tuple(
                    brands[(b + i) % n_brands][0] for i in (1, 2))))
            t0 = time.perf_counter()
            runs, states = seed_rows(brands, days, rng)
            async with pool.acquire() as conn:
                await conn.copy_records_to_table(
                    "runs", records=runs, columns=["run_id", "workspace_id", "engine", "model",
                                                   "prompt", "answer", "answer_sha256",
                                                   "answered_at", "prompt_context", "sources",
                                                   "collection_method"])
                await conn.copy_records_to_table(
                    "run_brand_status", records=states, columns=[
                        "run_id", "brand_id", "workspace_id", "status", "classification_id",
                        "citation_class", "decided_by", "position", "named_order"])
                await conn.execute("ANALYZE runs; ANALYZE run_brand_status")
            print(f"seeded {n_brands} brands, {len(runs):,} answers over {days} days, "
                  f"{len(states):,} classified (answer, brand) pairs in "
                  f"{time.perf_counter() - t0:.1f} s")
            made = 0
            for b, (brand_id, _) in enumerate(brands):
                for m, metric in enumerate(METRICS):
                    if made < rules:
                        await bus.handle(a.CreateAlertRule(
                            WORKSPACE, brand_id, metric,
                            segment=dict(SEGMENTS[(b + m) % len(SEGMENTS)])))
                        made += 1
            print(f"{made} rules (each of the {len(METRICS)} metrics once per brand, on one of "
                  f"{len(SEGMENTS)} segments in turn)")

            # The last Mondays inside the data whose two weeks before it are whole: one close
            # each (each is evaluated once, as in production).
            closes = [START + timedelta(weeks=w) for w in range(2, days // 7 + 1)][-n_closes:]
            uow = AlertingUnitOfWork(pool)
            before, _, end = last_closed_week(closes[-1])
            t0 = time.perf_counter()
            async with uow.read():
                tallies = await uow.decisions.tallies(WORKSPACE, "week", None, before, end)
            query_s = time.perf_counter() - t0
            print(f"the tallies query of one close alone: {query_s * 1000:.0f} ms wall "
                  f"({len(tallies):,} tally rows for the two weeks)")
            walls, cpus, fired = [], [], 0
            for now in closes:
                t0, c0 = time.perf_counter(), time.process_time()
                [evaluation] = await bus.handle(a.EvaluateClosedPeriods(now))
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
                assert evaluation.done and evaluation.rules == made, evaluation
                fired += evaluation.fired
            async with pool.acquire() as conn:
                family = await conn.fetchval("SELECT max(family_size) FROM alerts") or 0
            largest = f", the largest family of powered rules {family}" if fired else ""
            print(f"{len(closes)} weekly closes evaluated ({made} rules each; {fired} alerts fired "
                  f"in all{largest}):")
            print(f"  per close: median {statistics.median(walls) * 1000:.0f} ms wall, "
                  f"max {max(walls) * 1000:.0f} ms; CPU of this process median "
                  f"{statistics.median(cpus) * 1000:.0f} ms (PostgreSQL's own CPU not included)")
            print(f"  all closes: {sum(walls):.2f} s wall, {sum(cpus):.2f} s CPU")
            async with pool.acquire() as conn:
                # Tested = not underpowered: each tested rule's close is one row of alert_looks.
                by_metric = await conn.fetch(
                    "SELECT r.metric, count(l.rule_id) AS tested, "
                    "  count(l.rule_id) FILTER (WHERE l.fired) AS fired "
                    "FROM alert_rules r LEFT JOIN alert_looks l "
                    "  ON l.rule_id = r.rule_id AND l.look = 'close' GROUP BY 1 ORDER BY 1")
            print(f"  per metric over the {len(closes)} closes, rule-weeks tested (not "
                  "underpowered) / fired: " + ", ".join(
                      f"{r['metric']} {r['tested']}/{r['fired']}" for r in by_metric))
            # Two slot looks in the middle of the week after the last close (open, so far as
            # the data goes): the same work on the open week so far, each rule held to its
            # share of alpha, the looks recorded.
            for i in range(2):
                completed = closes[-1] + timedelta(days=3, hours=12, minutes=30 * i)
                t0, c0 = time.perf_counter(), time.process_time()
                slot = await bus.handle(a.EvaluateAfterSlot(
                    WORKSPACE, "bench-hourly", completed - timedelta(minutes=5), completed,
                    now=completed))
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                async with pool.acquire() as conn:
                    looks = await conn.fetchrow(
                        "SELECT count(*) AS n, max(information) AS t, max(spent) AS spent "
                        "FROM alert_looks WHERE period_start = $1 AND look LIKE 'slot:%'",
                        slot.period_start)
                print(f"slot look {i + 1} at the open week of {slot.period_start.date()}: "
                      f"{wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU; {slot.rules} rules, "
                      f"{slot.fired} fired; looks recorded so far {looks['n']} (largest "
                      f"information fraction {looks['t'] or 0:.2f}, largest alpha spent "
                      f"{looks['spent'] or 0:.2g})")
        finally:
            await pool.close()
    print(f"load at end (1/5/15 min): {load()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=1000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=20261205)
    parser.add_argument("--closes", type=int, default=4, help="the last N weekly closes timed")
    args = parser.parse_args()
    asyncio.run(main(args.rules, args.days, args.seed, args.closes))
