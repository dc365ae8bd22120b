"""``attesta classifier <command>``: the classifier's own tools.

- ``migrate``: create the database, the least-privilege app role, run alembic to head.
- ``seed-demo --sites-base URL --workspace W [--refresh]``: the KB's tracked brands, with sources
  pointing at the local brand-sites server; ``--refresh`` also fetches their ground truth.
- ``serve-sites [--port 8090]``: serve the fictional brand websites (attesta_kb_tools.sites).
- ``backfill (--from-offset N | --from-time ISO) [--group G]``: replay runs.recorded.v1 in its own
  consumer group, appending ``backfill`` history rows; resumable (offsets committed as it goes).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import datetime

from attesta_classifier.settings import ClassifierSettings


def _settings() -> ClassifierSettings:
    from attesta_platform.settings import load_settings

    return load_settings(ClassifierSettings)


def _migrate(settings: ClassifierSettings) -> int:
    from attesta_classifier.adapters.migrate import MIGRATION
    from attesta_platform.migrations import migrate_command

    return migrate_command(MIGRATION, settings.pg_admin_url, settings.classifier_db_name,
                           settings.classifier_db_role, settings.classifier_db_password,
                           done="migrated database {database}; app role {role}")


async def seed_demo(uow, workspace: str, sites_base: str) -> list[str]:
    """Create or update the KB's tracked brands in ``workspace``; returns their ids."""
    from attesta_classifier.service_layer import brands as svc
    from attesta_classifier.service_layer.errors import Conflict
    from attesta_contracts.api.classifier import BrandCreate, BrandUpdate
    from attesta_kb import load_brands
    from attesta_kb_tools.sites import local_url

    kb = load_brands()
    for b in kb:  # first without competitors (they must exist before they are named)
        sources = [local_url(u, sites_base) for u in b["sources"]]
        body = BrandCreate(brand_id=b["id"], name=b["name"], aliases=b["aliases"],
                           domains=b["domains"], sources=sources)
        try:
            await svc.create_brand(uow, workspace, body)
        except Conflict:
            await svc.update_brand(uow, workspace, b["id"], BrandUpdate(
                name=b["name"], aliases=b["aliases"], domains=b["domains"], sources=sources))
    ids = {b["id"] for b in kb}
    for b in kb:
        await svc.update_brand(uow, workspace, b["id"], BrandUpdate(
            competitors=[c for c in b.get("competitors", []) if c in ids]))
    return [b["id"] for b in kb]


async def _seed(settings: ClassifierSettings, args: argparse.Namespace) -> None:
    from urllib.parse import urlsplit

    from attesta_classifier.adapters.fetcher import SafeFetcher
    from attesta_classifier.adapters.postgres import ClassifierUnitOfWork, create_pool
    from attesta_classifier.service_layer import ground_truth
    from attesta_platform.outbound import OutboundPolicy

    pool = await create_pool(settings.app_db_url())
    uow = ClassifierUnitOfWork(pool)
    try:
        ids = await seed_demo(uow, args.workspace, args.sites_base)
        print(f"seeded {len(ids)} brands in workspace {args.workspace}: {', '.join(ids)}")
        if args.refresh:
            # Only the sites server's own address:port is allow-listed, and only for this command
            # (the allow-list takes address:port entries since the fetcher's #19 change).
            netloc = urlsplit(args.sites_base).netloc
            policy = OutboundPolicy.from_setting(netloc)
            fetcher = SafeFetcher(policy, max_bytes=settings.fetch_max_bytes,
                                  timeout_s=settings.fetch_timeout_s,
                                  max_redirects=settings.fetch_max_redirects)
            for bid in ids:
                o = await ground_truth.refresh(uow, fetcher, args.workspace, bid,
                                               deadline_s=settings.refresh_deadline_s)
                failed = sum(not s.ok for s in o.sources)
                print(f"  {bid}: {len(o.active_fact_ids)} active facts (+{len(o.added_fact_ids)} "
                      f"-{len(o.superseded_fact_ids)}), {failed} source(s) failed, "
                      f"hash {o.ground_truth_hash[:12]}")
            print("events are staged in the outbox; the running classifier's relay publishes them")
    finally:
        await pool.close()


async def backfill(settings: ClassifierSettings, *, group: str, start, topic: str,
                   batch: int, rate: float, progress_every_s: float = 5.0, stop=None):
    """Replay ``topic`` into ``group`` until the end offsets seen at start; returns Progress."""
    from functools import partial

    from attesta_classifier.adapters.postgres import ClassifierUnitOfWork, create_pool
    from attesta_classifier.bootstrap import build_heuristic
    from attesta_classifier.entrypoints.consumers import make_runs_handler
    from attesta_contracts.topics import RUNS_RECORDED
    from attesta_platform.messaging import Messaging
    from attesta_platform.outbox import run_relay

    pool = await create_pool(settings.app_db_url())
    messaging = Messaging.from_settings(settings, f"classifier-{group}")
    await messaging.start()
    stop = stop or asyncio.Event()
    relay_stop = asyncio.Event()
    heuristic = build_heuristic()
    consumer = messaging.batch_consumer(
        topic, group_id=group, payload_topic=RUNS_RECORDED,
        handler=make_runs_handler(partial(ClassifierUnitOfWork, pool), heuristic, consumer=group, trigger="backfill"),
        batch_max=batch, wait_ms=200, max_per_second=rate, start=start, stop_at_end=True,
        client_id=group)
    relay = asyncio.create_task(run_relay(pool, messaging, relay_stop))

    async def report() -> None:
        while True:
            await asyncio.sleep(progress_every_s)
            p = consumer.progress
            print(f"backfill {group}: {p.processed} runs, {p.remaining()} to go, "
                  f"{p.rate():.0f} runs/s, {p.dead_lettered} dead-lettered", flush=True)

    reporter = asyncio.create_task(report())
    try:
        progress = await consumer.run(stop)
    finally:
        reporter.cancel()
        relay_stop.set()
        await asyncio.gather(relay, reporter, return_exceptions=True)
        from attesta_platform.outbox import relay_batch

        while await relay_batch(pool, messaging):  # drain what this backfill staged
            pass
        await messaging.stop()
        await pool.close()
    return progress


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="attesta classifier")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="create database + app role, run migrations")
    seed = sub.add_parser("seed-demo", help="create the KB's tracked brands")
    seed.add_argument("--sites-base", default="http://127.0.0.1:8090")
    seed.add_argument("--workspace", default="demo")
    seed.add_argument("--refresh", action="store_true", help="also refresh their ground truth")
    sites = sub.add_parser("serve-sites", help="serve the fictional brand websites")
    sites.add_argument("--host", default="127.0.0.1")
    sites.add_argument("--port", type=int, default=8090)
    bf = sub.add_parser("backfill", help="replay runs.recorded.v1 into a backfill group")
    where = bf.add_mutually_exclusive_group(required=True)
    where.add_argument("--from-offset", type=int, help="offset in every partition")
    where.add_argument("--from-time", type=datetime.fromisoformat, help="ISO time, e.g. 2026-12-01T00:00:00Z")
    bf.add_argument("--group", default="classifier-backfill",
                    help="consumer group (re-running the same group resumes; a new one starts over)")
    bf.add_argument("--topic", default="runs.recorded.v1")
    bf.add_argument("--batch", type=int, default=None)
    bf.add_argument("--rate", type=float, default=None, help="max runs/s (default from settings)")
    args = parser.parse_args(argv)

    if args.command == "serve-sites":
        from attesta_kb_tools.sites import main as sites_main

        raise SystemExit(sites_main(["--host", args.host, "--port", str(args.port)]))
    settings = _settings()
    if args.command == "migrate":
        _migrate(settings)
    elif args.command == "seed-demo":
        asyncio.run(_seed(settings, args))
    elif args.command == "backfill":
        from attesta_platform.consuming import StartAt

        if args.from_time is not None and args.from_time.tzinfo is None:
            print("--from-time needs a timezone (e.g. Z)", file=sys.stderr)
            raise SystemExit(2)
        start = StartAt(offset=args.from_offset, time=args.from_time)
        progress = asyncio.run(backfill(
            settings, group=args.group, start=start, topic=args.topic,
            batch=args.batch or settings.backfill_batch_max,
            rate=args.rate or settings.backfill_max_runs_per_s))
        print(f"backfill {args.group} done: {progress.processed} runs, "
              f"{progress.dead_lettered} dead-lettered, {progress.rate():.0f} runs/s")
