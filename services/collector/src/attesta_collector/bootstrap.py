"""Wiring of the collector: PostgreSQL pool, the planner, the collection workers, the outbox
relay, the assistant-reply consumer and the internal HTTP API (``attesta run collector``).
Several instances may run side by side: they share work through PostgreSQL row locks only.

``build_bus`` is the one place the collector's handlers get their dependencies (by parameter
name, ``attesta_platform.bus``); the HTTP API, the chat.answered.v1 subscriber, the planner and
expiry loops and ``attesta collector run-once`` all hand their commands to the bus it returns.
The collection workers (``Collector.run``) are a loop of their own that leases rows and calls
engines. Nothing happens at import time.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Awaitable, Callable

import asyncpg

from attesta_collector.adapters.brands import HttpBrandDirectory
from attesta_collector.adapters.engines import (
    EngineHttp,
    OutboundEngineChecks,
    engine_http,
    openai_engines,
)
from attesta_collector.adapters.keys import (
    EngineKeys,
    KeyConfigError,
    OperatorKeys,
    SecretBox,
    parse_operator_keys,
)
from attesta_collector.adapters.keys import secret_box as box_of
from attesta_collector.adapters.postgres import CollectorUnitOfWork, create_pool
from attesta_collector.domain import commands as c
from attesta_collector.entrypoints.consumers import register_consumers
from attesta_collector.entrypoints.http import create_app
from attesta_collector.service_layer.collecting import Collector, CollectorLimits, CollectorTopics
from attesta_collector.service_layer.handlers import HANDLERS
from attesta_collector.service_layer.unit_of_work import (
    BrandDirectory,
    EngineChecks,
    EngineClients,
    Sealer,
    UnitOfWork,
)
from attesta_collector.settings import CollectorSettings
from attesta_contracts.roles import declared_topics
from attesta_platform import bus, outbox
from attesta_platform.logs import configure_logging, get_logger
from attesta_platform.messaging import Messaging
from attesta_platform.migrations import open_migrated_pool
from attesta_platform.service import serve
from attesta_platform.settings import load_settings

NAME = "collector"


def build_bus(new_uow: Callable[[], UnitOfWork], *, brands: BrandDirectory,
              engine_checks: EngineChecks, sealer: Sealer,
              topics: CollectorTopics = CollectorTopics()) -> bus.MessageBus:
    """The collector's bus: ``uow`` a fresh unit of work per message; ``brands`` the
    classifier's brand directory; ``engine_checks`` what an engine may name; ``sealer`` seals
    a secret's value; ``topics`` where collections publish."""
    return bus.bootstrap(HANDLERS, fresh={"uow": new_uow}, brands=brands,
                         engine_checks=engine_checks, sealer=sealer, topics=topics)


def service_bus(settings: CollectorSettings, new_uow: Callable[[], UnitOfWork], box: SecretBox,
                topics: CollectorTopics = CollectorTopics()) -> bus.MessageBus:
    """The bus with the settings' dependencies: the classifier's brands, the outbound policy
    (ATTESTA_FETCH_ALLOW, shared with the classifier) and operator keys, the secret box."""
    return build_bus(
        new_uow, brands=HttpBrandDirectory(settings.classifier_url, settings.internal_token),
        engine_checks=OutboundEngineChecks(settings.outbound_policy(), operator_keys(settings)),
        sealer=box, topics=topics)


def collector_limits(settings: CollectorSettings) -> CollectorLimits:
    return CollectorLimits(max_evidence_bytes=settings.collector_max_evidence_bytes,
                           max_claims=settings.collector_max_claims,
                           lease_margin_s=settings.collector_lease_margin_s)


def unit_of_work_factory(pool: asyncpg.Pool) -> Callable[[], UnitOfWork]:
    return functools.partial(CollectorUnitOfWork, pool)


def secret_box(settings: CollectorSettings) -> SecretBox:
    """The key-encryption key of engine secrets. Production refuses to start without one
    (exit 2); development makes one once in ATTESTA_COLLECTOR_SECRETS_KEK_FILE."""
    try:
        return box_of(kek=settings.collector_secrets_kek.get_secret_value(),
                      previous=settings.collector_secrets_previous_keks.get_secret_value(),
                      kek_file=settings.collector_secrets_kek_file,
                      production=settings.env == "production",
                      warn=lambda message: get_logger("attesta.collector").warning(message))
    except (KeyConfigError, OSError) as exc:
        print(f"collector: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def operator_keys(settings: CollectorSettings) -> OperatorKeys:
    return OperatorKeys(parse_operator_keys(settings.collector_operator_keys))


def engine_clients(settings: CollectorSettings, new_uow: Callable[[], UnitOfWork],
                   http: EngineHttp, box: SecretBox) -> EngineClients:
    """One client per (workspace, engine), each finding its key when it calls."""
    keys = EngineKeys(new_uow, box, operator_keys(settings), settings.collector_key_cache_s)
    return openai_engines(http, keys, max_body_bytes=settings.collector_max_body_bytes,
                          max_answer_chars=settings.collector_max_answer_chars)


async def open_pool(settings: CollectorSettings) -> asyncpg.Pool:
    return await open_migrated_pool(
        NAME, lambda: create_pool(settings.app_db_url(), max_size=settings.collector_db_pool_size,
                                  timeout=settings.dependency_timeout_s),
        probe_table="collections", url_setting="ATTESTA_COLLECTOR_DATABASE_URL")


async def every(interval_s: float, stop: asyncio.Event, step: Callable[[], Awaitable[object]],
                what: str) -> None:
    """``step`` every ``interval_s`` until ``stop``; a failed step is logged and tried again
    at the next tick (the loop outlives database outages)."""
    log = get_logger("attesta.collector")
    while not stop.is_set():
        try:
            await step()
        except Exception as exc:  # noqa: BLE001 - any failure is retried at the next tick
            log.warning(f"{what} failed; retrying", error=repr(exc))
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval_s)
        except TimeoutError:
            pass


async def run(settings: CollectorSettings) -> None:
    log = get_logger("attesta.collector")
    box = secret_box(settings)  # before anything opens: a missing production KEK stops here
    pool = await open_pool(settings)
    new_uow = unit_of_work_factory(pool)
    messaging = Messaging.from_settings(settings, f"{NAME}-{settings.instance_id}")
    topics = CollectorTopics()
    message_bus = service_bus(settings, new_uow, box, topics)
    register_consumers(messaging, message_bus, topics, group_id=settings.collector_consumer_group)
    http = engine_http(settings.outbound_policy())  # each engine's own timeout bounds every call
    collector = Collector(new_uow, settings.instance_id,
                          engine_clients(settings, new_uow, http, box), topics,
                          collector_limits(settings))
    app = create_app(message_bus, internal_token=settings.internal_token, database=pool)
    expiry_s = settings.collector_assistant_timeout_s

    async def relay(stop: asyncio.Event) -> None:
        await outbox.run_relay(pool, messaging, stop)

    async def planner(stop: asyncio.Event) -> None:
        await every(settings.collector_plan_interval_s, stop,
                    lambda: message_bus.handle(c.PlanDue()), "planning")

    async def slot_sweeper(stop: asyncio.Event) -> None:
        # Alerts are evaluated after each slot (issue #25): a slot is announced within one
        # tick of its last sample finishing.
        await every(min(5.0, settings.collector_plan_interval_s), stop,
                    lambda: message_bus.handle(c.CompleteSlots()), "completing slots")

    async def assistant_expiry(stop: asyncio.Event) -> None:
        await every(min(10.0, expiry_s / 4), stop,
                    lambda: message_bus.handle(c.ExpireAssistantRequests(expiry_s)),
                    "expiring assistant requests")

    log.info("collector starting", host=settings.collector_http_host,
             port=settings.collector_http_port, instance=settings.instance_id)
    try:
        # workers finish the calls in hand and record them at a stop; nothing new is claimed
        await serve(NAME, messaging, declared_topics(NAME), settings.kafka_partitions, app=app,
                    http_host=settings.collector_http_host,
                    http_port=settings.collector_http_port,
                    workers=[relay, planner, slot_sweeper, collector.run, assistant_expiry])
    finally:
        await http.close()
        await pool.close()


def main() -> None:
    settings = load_settings(CollectorSettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    asyncio.run(run(settings))
