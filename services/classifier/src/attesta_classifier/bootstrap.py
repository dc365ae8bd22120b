"""Wiring of the classifier service: ``attesta run classifier``.

One process runs: the internal HTTP API (uvicorn, :8081), the live batch consumer of
runs.recorded.v1 (group ``classifier``), the judge worker for ambiguous pairs, and the outbox
relay that publishes what the transactions staged. Nothing happens at import time.
"""

from __future__ import annotations

import asyncio
import functools
import gc
from typing import Any

from attesta_classifier.settings import ClassifierSettings
from attesta_contracts.topics import (
    CLASSIFICATION_RECORDED, CLASSIFICATION_REFUSED, DEAD_LETTERED, GROUNDTRUTH_REFRESHED,
    GROUNDTRUTH_SOURCE_FETCHED, RUNS_RECORDED)
from attesta_platform.logs import configure_logging, get_logger

NAME = "classifier"
TOPICS = [RUNS_RECORDED, CLASSIFICATION_RECORDED, CLASSIFICATION_REFUSED, GROUNDTRUTH_SOURCE_FETCHED,
          GROUNDTRUTH_REFRESHED, DEAD_LETTERED]
log = get_logger("attesta.classifier")


def build_heuristic():
    from attesta_classifier.domain.heuristic import HEURISTIC_VERSION, decide, load_tables
    from attesta_classifier.service_layer.pipeline import Heuristic

    load_tables()  # at start-up, not inside the first batch the consumer handles
    return Heuristic(decide, HEURISTIC_VERSION)


def build_fetcher(settings: ClassifierSettings):
    from attesta_classifier.adapters.fetcher import SafeFetcher

    return SafeFetcher(settings.outbound_policy(), max_bytes=settings.fetch_max_bytes,
                       timeout_s=settings.fetch_timeout_s, max_redirects=settings.fetch_max_redirects)


def build_judge_with_cache(settings: ClassifierSettings) -> tuple[Any, Any]:
    """The judge named by the settings, metered (calls and latency on /metrics), behind the
    Redis verdict cache; (judge, redis client)."""
    from attesta_classifier.adapters.judges import build_judge
    from attesta_classifier.adapters.telemetry import MeteredJudge

    judge = MeteredJudge(build_judge(settings))
    if not settings.verdict_cache:
        return judge, None
    import redis.asyncio as redis_asyncio

    from attesta_classifier.adapters.verdict_cache import CachedJudge

    client = redis_asyncio.from_url(settings.redis_url)
    return CachedJudge(judge, client, settings.verdict_cache_ttl_s), client


async def _main() -> None:
    from attesta_classifier.adapters.postgres import ClassifierUnitOfWork, create_pool
    from attesta_classifier.entrypoints.consumers import make_runs_handler
    from attesta_classifier.entrypoints.http import ApiContext, create_app
    from attesta_classifier.service_layer.judge_worker import Backoff, run_judge_worker
    from attesta_platform.messaging import Messaging
    from attesta_platform.migrations import open_migrated_pool
    from attesta_platform.outbox import run_relay
    from attesta_platform.service import serve
    from attesta_platform.settings import load_settings

    settings = load_settings(ClassifierSettings)
    configure_logging(NAME, settings.log_level, settings.log_json)
    if not settings.internal_token:
        log.error("ATTESTA_INTERNAL_TOKEN is required (the gateway's shared secret)")
        raise SystemExit(2)
    pool = await open_migrated_pool(
        NAME, lambda: create_pool(settings.app_db_url(), settings.classifier_db_pool_max),
        probe_table="brands", url_setting="ATTESTA_CLASSIFIER_DB_URL")
    new_uow = functools.partial(ClassifierUnitOfWork, pool)
    messaging = Messaging.from_settings(settings, NAME)
    heuristic = build_heuristic()
    judge, redis_client = build_judge_with_cache(settings)
    consumer = messaging.batch_consumer(
        RUNS_RECORDED, group_id=settings.classifier_group,
        handler=make_runs_handler(new_uow, heuristic, consumer=settings.classifier_group, trigger="live"),
        batch_max=settings.classifier_batch_max, wait_ms=settings.classifier_batch_wait_ms,
        client_id=settings.instance_id)

    def ready() -> str | None:
        if not consumer.started.is_set():
            return "starting: the runs.recorded.v1 consumer has not started yet"
        return None

    async def relay(stop: asyncio.Event) -> None:
        await run_relay(pool, messaging, stop)

    async def judge_worker(stop: asyncio.Event) -> None:
        await run_judge_worker(new_uow, judge, heuristic.version, stop,
                               concurrency=settings.judge_concurrency,
                               backoff=Backoff(settings.judge_retry_initial_s,
                                               settings.judge_retry_max_s))

    app = create_app(ApiContext(pool, new_uow, build_fetcher(settings), heuristic, judge,
                                settings.internal_token, settings.judge_timeout_s,
                                settings.refresh_deadline_s, ready,
                                review_sample_share=settings.review_sample_share))
    # What exists now lives as long as the process (modules, the lexicons and the PSL the rules
    # loaded, the app): out of the garbage collector's reach, its full collections no longer
    # walk it again and again (a tenth of a second of CPU each; docs/benchmarks/classifier.md).
    gc.collect()  # what is garbage already goes now, not into the frozen generation
    gc.freeze()
    log.info("classifier starting",
             http=f"http://{settings.classifier_http_host}:{settings.classifier_http_port}",
             judge=getattr(judge, "model_name", "?"))
    try:
        await serve(NAME, messaging, TOPICS, settings.kafka_partitions, app=app,
                    http_host=settings.classifier_http_host,
                    http_port=settings.classifier_http_port,
                    workers=[consumer.run, relay, judge_worker])
    finally:
        await pool.close()
        if redis_client is not None:
            await redis_client.aclose()


def main() -> None:
    asyncio.run(_main())
