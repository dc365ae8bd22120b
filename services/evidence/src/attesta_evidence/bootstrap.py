"""Wiring of the evidence service: signing key, PostgreSQL pool, message bus, Kafka intake,
outbox relay, tree-head signer and the HTTP API (``attesta run evidence``); its settings are in
``settings.py``.

``build_bus`` is the one place the evidence handlers get their dependencies (by parameter name,
``attesta_platform.bus``); the HTTP routes, the intake subscribers and the signer all hand their
commands and queries to the bus it returns. Nothing happens at import time.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from attesta_contracts.topics import (
    DEAD_LETTERED,
    ENGINE_RESPONSE_CAPTURED,
    EVIDENCE_RECORDED,
    GROUNDTRUTH_SOURCE_FETCHED,
    RUNS_RECORDED,
)
from attesta_evidence.adapters.keys import SigningKeyError, generate_key_file, load_private_key
from attesta_evidence.adapters.postgres import EvidenceUnitOfWork, create_pool
from attesta_evidence.domain.commands import SignTreeHead
from attesta_evidence.entrypoints.consumers import register_consumers
from attesta_evidence.entrypoints.http import create_app
from attesta_evidence.entrypoints.workers import run_signer
from attesta_evidence.service_layer.handlers import HANDLERS
from attesta_evidence.service_layer.intake import Producer
from attesta_evidence.service_layer.log import TransparencyLog
from attesta_evidence.service_layer.unit_of_work import UnitOfWork
from attesta_evidence.settings import EvidenceSettings
from attesta_platform import bus, outbox
from attesta_platform.logs import configure_logging, get_logger
from attesta_platform.messaging import Messaging
from attesta_platform.migrations import open_migrated_pool
from attesta_platform.service import serve
from attesta_platform.settings import load_settings

if TYPE_CHECKING:
    import asyncpg
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

NAME = "evidence"
log = get_logger("attesta.evidence")


def build_bus(new_uow: Callable[[], UnitOfWork], *, tlog: TransparencyLog | None = None,
              events: Producer | None = None) -> bus.MessageBus:
    """The evidence bus: ``uow`` a fresh unit of work per message; ``tlog`` the transparency log
    (the log's queries and the signer); ``events`` who stages the intake's outbox events (a
    ``Messaging``). A part left out is None: only the handlers that use it need it."""
    return bus.bootstrap(HANDLERS, fresh={"uow": new_uow}, tlog=tlog, events=events)


def signing_key(settings: EvidenceSettings) -> Ed25519PrivateKey:
    """The log key. Production refuses to start without one; development makes one once."""
    path = settings.evidence_signing_key_file
    try:
        if path.exists():
            return load_private_key(path)
        if settings.env == "production":
            raise SigningKeyError(
                f"ATTESTA_EVIDENCE_SIGNING_KEY_FILE={path} does not exist; production never "
                "makes its own key: create one with `attesta evidence keygen --out <file>` and "
                "publish its public half")
        key = generate_key_file(path)
        log.warning("generated a development log signing key", path=str(path))
        return key
    except SigningKeyError as exc:
        print(f"evidence: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


async def open_pool(settings: EvidenceSettings) -> asyncpg.Pool:
    return await open_migrated_pool(
        NAME, lambda: create_pool(settings.app_db_url(), max_size=settings.evidence_db_pool_size,
                                  timeout=settings.dependency_timeout_s),
        probe_table="tree_heads", url_setting="ATTESTA_EVIDENCE_DATABASE_URL")


async def run(settings: EvidenceSettings, key: Ed25519PrivateKey) -> None:
    pool = await open_pool(settings)
    new_uow = functools.partial(EvidenceUnitOfWork, pool)
    tlog = TransparencyLog(new_uow, key)
    messaging = Messaging.from_settings(settings, f"{NAME}-{settings.instance_id}")
    message_bus = build_bus(new_uow, tlog=tlog, events=messaging)
    await message_bus.handle(SignTreeHead())  # there is always a signed head to prove against
    subscribers = register_consumers(messaging, message_bus, settings.evidence_max_content_bytes,
                                     group_id=settings.evidence_consumer_group,
                                     auto_offset_reset=settings.evidence_consumer_offset_reset,
                                     consumers_per_topic=settings.evidence_intake_consumers)
    state = {"consuming": False}
    app = create_app(message_bus, database=pool, internal_token=settings.internal_token,
                     max_body_bytes=settings.evidence_max_body_bytes,
                     ready=lambda: None if state["consuming"] else
                     "Kafka consumers not started or not assigned partitions yet")

    async def relay(stop: asyncio.Event) -> None:
        await outbox.run_relay(pool, messaging, stop)

    async def signer(stop: asyncio.Event) -> None:
        await run_signer(message_bus, stop, settings.evidence_tree_head_interval_s)

    async def mark_ready_when_assigned(stop: asyncio.Event) -> None:
        # Ready means every intake topic's partitions are owned by a consumer, not merely that
        # the consumers were started (one consumer per topic suffices: extra ones may sit idle).
        deadline = asyncio.get_running_loop().time() + settings.dependency_timeout_s * 3
        warned = False
        while not all(any(s.consumer is not None and s.consumer.assignment() for s in subs)
                      for subs in subscribers.values()):
            if stop.is_set():
                return
            if not warned and asyncio.get_running_loop().time() > deadline:
                log.warning("intake consumers have no partitions yet; not ready")
                warned = True
            await asyncio.sleep(0.05)
        state["consuming"] = True
        log.info("evidence intake assigned", group=settings.evidence_consumer_group)

    # What exists now lives as long as the process (modules, pydantic's schemas, the app): out
    # of the garbage collector's reach, its full collections no longer walk it again and again
    # (on the Kafka intake they cost ~28 us of CPU per record, 0.8 us frozen; as the classifier
    # does, docs/benchmarks/evidence.md).
    gc.collect()  # what is garbage already goes now, not into the frozen generation
    gc.freeze()
    log.info("evidence API starting", host=settings.evidence_http_host,
             port=settings.evidence_http_port, key_id=tlog.key_id)
    try:
        # The public API answers even while Kafka is away: it only needs PostgreSQL.
        await serve(NAME, messaging,
                    [RUNS_RECORDED, GROUNDTRUTH_SOURCE_FETCHED, ENGINE_RESPONSE_CAPTURED,
                     EVIDENCE_RECORDED, DEAD_LETTERED],
                    settings.kafka_partitions, app=app, http_host=settings.evidence_http_host,
                    http_port=settings.evidence_http_port,
                    workers=[relay, signer, mark_ready_when_assigned])
    finally:
        await pool.close()


def main() -> None:
    settings = load_settings(EvidenceSettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    key = signing_key(settings)
    asyncio.run(run(settings, key))
