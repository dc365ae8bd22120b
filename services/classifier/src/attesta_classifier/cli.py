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
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from attesta_classifier.adapters.fetcher import SafeFetcher
from attesta_classifier.adapters.migrate import MIGRATION
from attesta_classifier.adapters.postgres import CONCURRENT_WRITE, ClassifierUnitOfWork, create_pool
from attesta_classifier.bootstrap import build_bus, build_heuristic
from attesta_classifier.domain.commands import CreateBrand, RefreshGroundTruth, UpdateBrand
from attesta_classifier.entrypoints.consumers import make_runs_handler
from attesta_classifier.service_layer.errors import Conflict
from attesta_classifier.settings import ClassifierSettings
from attesta_contracts.topics import RUNS_RECORDED
from attesta_kb import load_brands
from attesta_platform.bus import MessageBus
from attesta_platform.consuming import StartAt
from attesta_platform.messaging import Messaging, topic_or_copy
from attesta_platform.migrations import migrate_command
from attesta_platform.outbound import OutboundPolicy
from attesta_platform.outbox import relay_batch, run_relay
from attesta_platform.settings import load_settings


def _migrate(settings: ClassifierSettings) -> int:
    return migrate_command(MIGRATION, settings.pg_admin_url, settings.classifier_db_name,
                           settings.classifier_db_role, settings.classifier_db_password,
                           done="migrated database {database}; app role {role}")


async def seed_demo(bus: MessageBus, workspace: str, sites_base: str) -> list[str]:
    """Create or update the KB's tracked brands in ``workspace``; returns their ids."""
    # The brand websites are a test fixture of the tools package, not in the runtime wheel: only
    # the commands that serve or seed them import it.
    from attesta_kb_tools.sites import local_url

    kb = load_brands()
    for b in kb:  # first without competitors (they must exist before they are named)
        brand_id, name = b["id"], b["name"]
        aliases, domains = tuple(b["aliases"]), tuple(b["domains"])
        sources = tuple(local_url(u, sites_base) for u in b["sources"])
        try:
            await bus.handle(CreateBrand(workspace, name, brand_id, aliases, domains, (), sources))
        except Conflict:
            await bus.handle(UpdateBrand(workspace, brand_id, name, aliases, domains, None, sources))
    ids = {b["id"] for b in kb}
    for b in kb:
        await bus.handle(UpdateBrand(workspace, b["id"], competitors=tuple(
            c for c in b.get("competitors", []) if c in ids)))
    return [b["id"] for b in kb]


async def _seed(settings: ClassifierSettings, args: argparse.Namespace) -> None:
    # Only the sites server's own address:port is allow-listed, and only for this command (the
    # allow-list takes address:port entries since the fetcher's #19 change).
    fetcher = SafeFetcher(OutboundPolicy.from_setting(urlsplit(args.sites_base).netloc),
                          max_bytes=settings.fetch_max_bytes, timeout_s=settings.fetch_timeout_s,
                          max_redirects=settings.fetch_max_redirects)
    pool = await create_pool(settings.app_db_url())
    bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=build_heuristic(),
                    fetcher=fetcher, refresh_deadline_s=settings.refresh_deadline_s)
    try:
        ids = await seed_demo(bus, args.workspace, args.sites_base)
        print(f"seeded {len(ids)} brands in workspace {args.workspace}: {', '.join(ids)}")
        if args.refresh:
            for bid in ids:
                o = await bus.handle(RefreshGroundTruth(args.workspace, bid))
                failed = sum(not s.ok for s in o.sources)
                print(f"  {bid}: {len(o.active_fact_ids)} active facts (+{len(o.added_fact_ids)} "
                      f"-{len(o.superseded_fact_ids)}), {failed} source(s) failed, "
                      f"hash {o.ground_truth_hash[:12]}")
            print("events are staged in the outbox; the running classifier's relay publishes them")
    finally:
        await pool.close()


async def backfill(settings: ClassifierSettings, *, group: str, start: StartAt, topic: str,
                   batch: int, rate: float, progress_every_s: float = 5.0,
                   stop: asyncio.Event | None = None) -> Any:
    """Replay ``topic`` into ``group`` until the end offsets seen at start; returns Progress."""
    pool = await create_pool(settings.app_db_url())
    messaging = Messaging.from_settings(settings, f"classifier-{group}")
    await messaging.start()
    stop = stop or asyncio.Event()
    relay_stop = asyncio.Event()
    bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=build_heuristic())
    consumer = messaging.batch_consumer(
        topic_or_copy(RUNS_RECORDED, topic), group_id=group,
        handler=make_runs_handler(bus, consumer=group, trigger="backfill",
                                  retryable=CONCURRENT_WRITE),
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
    bf.add_argument("--topic", default="runs.recorded.v1",
                    help="runs.recorded.v1 or a copy of it (a mirror, a restored backup)")
    bf.add_argument("--batch", type=int, default=None)
    bf.add_argument("--rate", type=float, default=None, help="max runs/s (default from settings)")
    args = parser.parse_args(argv)

    if args.command == "serve-sites":
        from attesta_kb_tools.sites import main as sites_main  # a tools package: see seed_demo

        raise SystemExit(sites_main(["--host", args.host, "--port", str(args.port)]))
    settings = load_settings(ClassifierSettings)
    if args.command == "migrate":
        _migrate(settings)
    elif args.command == "seed-demo":
        asyncio.run(_seed(settings, args))
    elif args.command == "backfill":
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
