"""Wiring of the gateway: messaging, stores, rate limits, upstream clients, HTTP app,
uvicorn. Nothing is built at import time."""

from __future__ import annotations

import os

import uvicorn
from fastapi import FastAPI

from attesta_gateway.adapters.ratelimit import RedisRateLimiter
from attesta_gateway.adapters.unit_of_work import PostgresUnitOfWork
from attesta_gateway.adapters.upstream import Upstream
from attesta_gateway.domain.ratelimit import Limit
from attesta_gateway.entrypoints.deps import Gateway
from attesta_gateway.entrypoints.guards import GuardedHttpProtocol, security_headers
from attesta_gateway.entrypoints.http import create_app
from attesta_gateway.service_layer.auth import Authenticator, LastUsed
from attesta_gateway.service_layer.handlers import HANDLERS
from attesta_gateway.service_layer.limits import LimitsConfig, RateLimits
from attesta_gateway.settings import GatewaySettings, load_gateway_settings
from attesta_platform.bus import bootstrap as bind_handlers
from attesta_platform.logs import configure_logging, get_logger
from attesta_platform.messaging import Messaging

__all__ = ["Gateway", "app_factory", "build_app", "build_gateway", "main"]

NAME = "gateway"


def unit_of_work(s: GatewaySettings) -> PostgresUnitOfWork:
    # An in-flight idempotency lock outlives the longest forwarded call, then frees the key.
    lock_s = s.upstream_deadline_s + s.upstream_timeout_s + 5
    return PostgresUnitOfWork(s.app_db_url(), idempotency_ttl_s=s.idempotency_ttl_s,
                              idempotency_lock_s=lock_s)


def build_gateway(settings: GatewaySettings) -> Gateway:
    s = settings
    redis = RedisRateLimiter(s.redis_url, timeout_s=s.redis_timeout_s,
                             prefix=s.rate_limit_prefix, max_lease=s.rate_limit_lease_max)
    window = s.rate_limit_window_s
    limits = RateLimits(LimitsConfig(
        per_key=Limit(s.rate_limit_per_key, window),
        local_per_key=Limit(s.rate_limit_local_per_key, window),
        public_per_client=Limit(s.rate_limit_public_per_client, window),
        chat_per_client=Limit(s.rate_limit_chat_per_client, window),
        auth_failures_per_client=Limit(s.rate_limit_auth_failures_per_client, window),
        chat_per_key=Limit(s.rate_limit_chat_per_key, window),
        chat_in_flight=s.chat_max_in_flight, chat_in_flight_per_key=s.chat_max_in_flight_per_key,
        chat_slot_hold_s=s.chat_timeout_s + 5), redis)

    def upstream(name: str, url: str) -> Upstream:
        return Upstream(name, url, s.internal_token, timeout_s=s.upstream_timeout_s,
                        connect_timeout_s=s.upstream_connect_timeout_s,
                        attempts=s.upstream_attempts, deadline_s=s.upstream_deadline_s,
                        max_connections=s.upstream_max_connections)

    uow = unit_of_work(s)
    gw = Gateway(
        settings=s,
        messaging=Messaging.from_settings(s, f"{NAME}-{s.instance_id}"),
        uow=uow,
        authenticator=Authenticator(uow.keys, s.secret_bytes(), s.key_cache_ttl_s),
        last_used=LastUsed(uow.keys, s.key_last_used_interval_s),
        limits=limits,
        classifier=upstream("classifier", s.classifier_url),
        evidence=upstream("evidence", s.evidence_url),
        redis=redis,
        collector=upstream("collector", s.collector_url),
    )
    # The handlers' dependencies by name; ``upstream`` reads the gateway's fields at call time.
    gw.bus = bind_handlers(HANDLERS, upstream=gw.upstream, uow=uow, publisher=gw.messaging,
                           replies=gw.replies, reply_to=s.instance_id,
                           chat_timeout_s=s.chat_timeout_s, secret=s.secret_bytes())
    return gw


def build_app(settings: GatewaySettings | None = None) -> FastAPI:
    settings = settings or load_gateway_settings()
    return create_app(build_gateway(settings))


def app_factory() -> FastAPI:
    """Entry point of each uvicorn worker process (``http_workers`` > 1): every worker is its own
    gateway instance with its own instance id, so its reply consumer group is its own."""
    settings = load_gateway_settings()
    configure_logging(NAME, settings.log_level, settings.log_json)
    settings.instance_id = f"{settings.instance_id}-w{os.getpid()}"
    configure_protocol(settings)
    return build_app(settings)


def configure_protocol(settings: GatewaySettings) -> type[GuardedHttpProtocol]:
    """uvicorn's HTTP protocol with the gateway's header deadline (entrypoints/guards.py)."""
    GuardedHttpProtocol.configure(settings.http_header_timeout_s,
                                  security_headers(settings.content_security_policy))
    return GuardedHttpProtocol


def main() -> None:
    settings = load_gateway_settings()
    configure_logging(NAME, settings.log_level, settings.log_json)
    log = get_logger("attesta.gateway")
    if settings.env != "production":
        log.warning("DEVELOPMENT MODE: API-key digests use the built-in dev secret"
                    if not settings.gateway_secret else "development mode",
                    hint="set ATTESTA_ENV=production and ATTESTA_GATEWAY_SECRET for production")
    if not settings.internal_token:
        log.warning("ATTESTA_INTERNAL_TOKEN is empty: the classifier and evidence internal "
                    "routes will refuse the gateway (502 internal_auth_failed)")
    # X-Forwarded-For only from the listed proxies; none listed: the socket peer is the client.
    proxies = settings.forwarded_allow_ips or None
    protocol = configure_protocol(settings)
    if settings.http_workers > 1:
        uvicorn.run("attesta_gateway.bootstrap:app_factory", factory=True,
                    workers=settings.http_workers, host=settings.http_host,
                    port=settings.http_port, log_level="warning", access_log=False,
                    http=protocol, proxy_headers=proxies is not None, forwarded_allow_ips=proxies)
        return
    uvicorn.run(build_app(settings), host=settings.http_host, port=settings.http_port,
                log_level="warning", access_log=False, http=protocol,
                proxy_headers=proxies is not None, forwarded_allow_ips=proxies)
