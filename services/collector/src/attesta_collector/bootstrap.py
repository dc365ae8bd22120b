"""Wiring of the collector: settings, PostgreSQL pool, the planner, the collection workers,
the outbox relay, the assistant-reply consumer and the internal HTTP API
(``attesta run collector``). Several instances may run side by side: they share work through
PostgreSQL row locks only."""

from __future__ import annotations

import asyncio
import sys

from pydantic import Field

from attesta_platform.settings import ServiceSettings, app_database_url, load_settings

NAME = "collector"


class CollectorSettings(ServiceSettings):
    # Unset: the database `attesta collector migrate` made on ATTESTA_PG_ADMIN_URL's server.
    collector_database_url: str | None = None
    collector_database: str = "attesta_collector"
    collector_db_role: str = "attesta_collector"
    collector_db_password: str = "attesta-collector-dev-only"
    collector_db_pool_size: int = Field(default=10, ge=2, le=100)
    collector_http_host: str = "127.0.0.1"
    collector_http_port: int = Field(default=8085, ge=0, le=65535)
    # The classifier's internal API: the tracked brands (branded prompts, source labels).
    classifier_url: str = "http://127.0.0.1:8081"
    # How often a planner looks for due schedules.
    collector_plan_interval_s: float = Field(default=5.0, gt=0)
    # Engine answers: body bytes read at most (a larger body is a too_large fault) and answer
    # characters kept (the run contract's limit).
    collector_max_body_bytes: int = Field(default=2_000_000, ge=1024)
    collector_max_answer_chars: int = Field(default=200_000, ge=100, le=200_000)
    # Raw bodies up to this size are also sent to the public evidence log (larger ones stay in
    # the collector's raw_responses only): the broker's message limit bounds it.
    collector_max_evidence_bytes: int = Field(default=512 * 1024, ge=0, le=900_000)
    # A collection claimed this many times without finishing (crashes) fails.
    collector_max_claims: int = Field(default=5, ge=1)
    collector_lease_margin_s: float = Field(default=30.0, ge=1)
    # Our assistant: a request unanswered for this long fails (a late reply still links).
    collector_assistant_timeout_s: float = Field(default=120.0, gt=0)
    collector_consumer_group: str = "collector"


    def app_db_url(self) -> str:
        return self.collector_database_url or app_database_url(
            self.pg_admin_url, self.collector_database, self.collector_db_role,
            self.collector_db_password)

def collector_limits(settings: CollectorSettings):
    from attesta_collector.service_layer.collecting import CollectorLimits

    return CollectorLimits(
        max_body_bytes=settings.collector_max_body_bytes,
        max_answer_chars=settings.collector_max_answer_chars,
        max_evidence_bytes=settings.collector_max_evidence_bytes,
        max_claims=settings.collector_max_claims,
        lease_margin_s=settings.collector_lease_margin_s)


async def open_pool(settings: CollectorSettings):
    import asyncpg

    from attesta_collector.adapters.postgres import create_pool

    try:
        pool = await create_pool(settings.app_db_url(),
                                 max_size=settings.collector_db_pool_size,
                                 timeout=settings.dependency_timeout_s)
        async with pool.acquire() as conn:
            await conn.fetchval("SELECT count(*) FROM collections")
    except asyncpg.UndefinedTableError:
        print("collector: the database has no collector tables: run `attesta collector migrate` "
              "with ATTESTA_PG_ADMIN_URL", file=sys.stderr)
        raise SystemExit(2) from None
    except (OSError, asyncpg.PostgresError) as exc:
        print(f"collector: cannot use PostgreSQL at ATTESTA_COLLECTOR_DATABASE_URL: {exc!r}",
              file=sys.stderr)
        raise SystemExit(3) from None
    return pool


async def run_planner(pool, stop: asyncio.Event, interval_s: float) -> None:
    from attesta_collector.service_layer.planning import plan_due
    from attesta_platform.logs import get_logger

    log = get_logger("attesta.collector.planner")
    while not stop.is_set():
        try:
            await plan_due(pool)
        except Exception as exc:  # noqa: BLE001 - the planner outlives outages
            log.warning("planning failed; retrying", error=repr(exc))
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval_s)
        except TimeoutError:
            pass


async def run_assistant_expiry(pool, messaging, topics, stop: asyncio.Event,
                               timeout_s: float) -> None:
    from attesta_collector.service_layer.collecting import expire_assistant_requests

    while not stop.is_set():
        try:
            await expire_assistant_requests(pool, messaging, topics, timeout_s)
        except Exception:  # noqa: BLE001
            pass
        try:
            await asyncio.wait_for(stop.wait(), timeout=min(10.0, timeout_s / 4))
        except TimeoutError:
            pass


async def run(settings: CollectorSettings) -> None:
    from attesta_collector.adapters.brands import HttpBrandDirectory
    from attesta_collector.adapters.engines import engine_session
    from attesta_collector.entrypoints.consumers import register_consumers
    from attesta_collector.entrypoints.http import ApiContext, create_app
    from attesta_collector.service_layer.collecting import Collector, CollectorTopics
    from attesta_contracts.topics import (
        CHAT_ANSWERED,
        CHAT_REQUESTED,
        COLLECTION_FAILED,
        DEAD_LETTERED,
        ENGINE_RESPONSE_CAPTURED,
        RUNS_RECORDED,
    )
    from attesta_platform import outbox
    from attesta_platform.logs import get_logger
    from attesta_platform.messaging import Messaging
    from attesta_platform.service import serve

    log = get_logger("attesta.collector")
    pool = await open_pool(settings)
    messaging = Messaging.from_settings(settings, f"{NAME}-{settings.instance_id}")
    topics = CollectorTopics()
    register_consumers(messaging, pool, topics, group_id=settings.collector_consumer_group)
    http = engine_session()  # each engine's own timeout bounds every call
    collector = Collector(pool, messaging, settings.instance_id, http, topics,
                          collector_limits(settings))
    app = create_app(ApiContext(pool, HttpBrandDirectory(settings.classifier_url,
                                                         settings.internal_token),
                                settings.internal_token))

    async def relay(stop: asyncio.Event) -> None:
        await outbox.run_relay(pool, messaging, stop)

    async def planner(stop: asyncio.Event) -> None:
        await run_planner(pool, stop, settings.collector_plan_interval_s)

    async def assistant_expiry(stop: asyncio.Event) -> None:
        await run_assistant_expiry(pool, messaging, topics, stop,
                                   settings.collector_assistant_timeout_s)

    log.info("collector starting", host=settings.collector_http_host,
             port=settings.collector_http_port, instance=settings.instance_id)
    try:
        # workers finish the calls in hand and record them at a stop; nothing new is claimed
        await serve(NAME, messaging,
                    [RUNS_RECORDED, COLLECTION_FAILED, ENGINE_RESPONSE_CAPTURED, CHAT_REQUESTED,
                     CHAT_ANSWERED, DEAD_LETTERED],
                    settings.kafka_partitions, app=app, http_host=settings.collector_http_host,
                    http_port=settings.collector_http_port,
                    workers=[relay, planner, collector.run, assistant_expiry])
    finally:
        await http.close()
        await pool.close()


def main() -> None:
    from attesta_platform.logs import configure_logging

    settings = load_settings(CollectorSettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    asyncio.run(run(settings))
