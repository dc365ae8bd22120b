"""``attesta collector <subcommand>``: migrate, run-once, rewrap-secrets.

``run-once`` plans one slot of a schedule now (default: the cadence's current slot; re-running
it for the same slot resumes, it never collects a sample twice), collects it in this process
with a progress bar, publishes the runs (outbox) and exits: 0 when every sample was collected,
1 when some failed (their reasons are printed), 2 when it could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: `attesta collector migrate` stays light
    from attesta_collector.service_layer.collecting import CollectorTopics
    from attesta_collector.settings import CollectorSettings


def _settings() -> CollectorSettings:
    # imported here, as in every subcommand: `attesta collector migrate` stays light
    from attesta_collector.settings import CollectorSettings
    from attesta_platform.settings import load_settings

    return load_settings(CollectorSettings)


def _migrate(args: argparse.Namespace) -> int:
    # imported here: the migration needs none of the service's runtime
    from attesta_collector.adapters.migrate import MIGRATION
    from attesta_platform.migrations import migrate_command

    s = _settings()
    return migrate_command(MIGRATION, s.pg_admin_url, s.collector_database, s.collector_db_role,
                           s.collector_db_password, done="collector: database {database} migrated")


async def run_once(settings: CollectorSettings, workspace: str, schedule_id: str,
                   slot: datetime | None, progress: bool = True, timeout_s: float = 3600.0,
                   topics: CollectorTopics | None = None) -> int:
    # imported here, as in every subcommand: `attesta collector migrate` stays light
    from tqdm import tqdm

    # (the same: the service's parts load only when run-once is chosen)
    from attesta_collector.adapters.engines import engine_http
    from attesta_collector.bootstrap import (
        collector_limits,
        engine_clients,
        open_pool,
        secret_box,
        service_bus,
        unit_of_work_factory,
    )
    from attesta_collector.domain import commands as c
    from attesta_collector.service_layer.collecting import Collector, CollectorTopics
    from attesta_collector.service_layer.errors import ServiceError
    from attesta_platform import outbox
    from attesta_platform.messaging import Messaging

    box = secret_box(settings)
    pool = await open_pool(settings)
    new_uow = unit_of_work_factory(pool)
    topics = topics or CollectorTopics()
    bus = service_bus(settings, new_uow, box, topics)
    messaging = Messaging.from_settings(settings, f"collector-cli-{settings.instance_id}")
    try:
        try:
            target, new = await bus.handle(c.PlanSlotNow(workspace, schedule_id, slot))
        except ServiceError as exc:
            print(f"run-once: {exc.reason}", file=sys.stderr)
            return 2
        await messaging.ensure_topics([topics.runs_recorded, topics.collection_failed,
                                       topics.engine_response_captured, topics.chat_requested],
                                      settings.kafka_partitions)
        await messaging.start()
        async with engine_http(settings.outbound_policy()) as http:
            collector = Collector(new_uow, f"cli-{settings.instance_id}",
                                  engine_clients(settings, new_uow, http, box), topics,
                                  collector_limits(settings))
            stop = asyncio.Event()
            relay = asyncio.create_task(outbox.run_relay(pool, messaging, stop))
            work = asyncio.create_task(collector.run(stop, schedule_id=schedule_id))
            counts = await bus.handle(c.GetSlotProgress(workspace, schedule_id, target))
            total = sum(counts.values())
            bar = tqdm(total=total, desc=f"{schedule_id} @ {target:%Y-%m-%d %H:%M}Z",
                       unit="sample", disable=not progress, file=sys.stderr)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_s
            while True:
                counts = await bus.handle(c.GetSlotProgress(workspace, schedule_id, target))
                done = counts.get("collected", 0) + counts.get("failed", 0)
                bar.n = done
                bar.set_postfix(failed=counts.get("failed", 0), refresh=False)
                bar.refresh()
                if done >= total or loop.time() > deadline:
                    break
                await asyncio.sleep(0.2)
            bar.close()
            stop.set()
            await work
            await relay
            while await outbox.relay_batch(pool, messaging):  # publish what is left
                pass
        failed = await bus.handle(c.ListCollections(workspace, schedule_id, "failed", target,
                                                    limit=1000))
        print(f"slot {target.isoformat()}: {total} samples ({new} new in this run), "
              f"{counts.get('collected', 0)} collected, {counts.get('failed', 0)} failed, "
              f"{total - done} unfinished")
        for row in failed:
            print(f"  failed {row['collection_id']} ({row['engine_id']}): {row['last_error']}")
        return 0 if done >= total and not counts.get("failed") else 1
    finally:
        await messaging.stop()
        await pool.close()


async def rewrap_secrets(settings: CollectorSettings) -> int:
    """After a KEK rotation (the new KEK in ATTESTA_COLLECTOR_SECRETS_KEK, the old one in
    ATTESTA_COLLECTOR_SECRETS_PREVIOUS_KEKS): wrap every live secret's data key with the new
    KEK (the ciphertexts stay as they are); 1 when some secret no KEK here can open."""
    # imported here, as in every subcommand: `attesta collector migrate` stays light
    from attesta_collector.adapters.keys import SecretUnreadable
    from attesta_collector.bootstrap import open_pool, secret_box, unit_of_work_factory
    from attesta_collector.domain.keys import SealedSecret

    box = secret_box(settings)
    pool = await open_pool(settings)
    done, unreadable = 0, 0
    try:
        async with unit_of_work_factory(pool)() as uow:
            for row in await uow.secrets.sealed_under_other_kek(box.kek_id, 1_000_000):
                sealed = SealedSecret(row["kek_id"], bytes(row["wrapped_key"]),
                                      bytes(row["ciphertext"]))
                try:
                    new = box.rewrap(row["workspace_id"], row["secret_id"], sealed)
                except SecretUnreadable as exc:
                    print(f"  cannot open {row['workspace_id']}/{row['secret_id']}: {exc}",
                          file=sys.stderr)
                    unreadable += 1
                    continue
                if new is not None:
                    done += await uow.secrets.rewrap(row["workspace_id"], row["secret_id"], new)
            await uow.commit()
    finally:
        await pool.close()
    print(f"rewrap-secrets: {done} secret(s) now wrapped by {box.kek_id}, {unreadable} unreadable")
    return 1 if unreadable else 0


def _rewrap_secrets(args: argparse.Namespace) -> int:
    return asyncio.run(rewrap_secrets(_settings()))


def _run_once(args: argparse.Namespace) -> int:
    slot = datetime.fromisoformat(args.slot) if args.slot else None
    if slot is not None and slot.tzinfo is None:
        print("run-once: --slot needs a timezone (e.g. 2026-12-04T10:00:00Z)", file=sys.stderr)
        return 2
    return asyncio.run(run_once(_settings(), args.workspace, args.schedule, slot,
                                progress=not args.no_progress, timeout_s=args.timeout_s))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="attesta collector")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="create database/role (ATTESTA_PG_ADMIN_URL) and run alembic")
    ro = sub.add_parser("run-once", help="collect one slot of a schedule now, with a progress bar")
    ro.add_argument("schedule", help="schedule id")
    ro.add_argument("--workspace", required=True)
    ro.add_argument("--slot", help="the slot (RFC 3339, with timezone); default: the current one")
    ro.add_argument("--timeout-s", type=float, default=3600.0)
    ro.add_argument("--no-progress", action="store_true")
    sub.add_parser("rewrap-secrets", help="after a KEK rotation: wrap every engine secret's data "
                                          "key with the current KEK")
    return parser


def main(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "migrate": _migrate, "run-once": _run_once, "rewrap-secrets": _rewrap_secrets}
    raise SystemExit(handlers[args.command](args))


if __name__ == "__main__":
    main(sys.argv[1:])
