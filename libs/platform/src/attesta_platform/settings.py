"""Settings shared by every service, read from the environment and validated at start.

A service subclasses ``ServiceSettings``; a missing or invalid value stops start-up with a
clear message (see ``load_settings``) instead of failing later on first use.
"""

from __future__ import annotations

import os
import socket
import sys
import uuid
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import quote, urlsplit, urlunsplit

from pydantic import AfterValidator, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from attesta_platform.outbound import OutboundPolicy, parse_allow_list

S = TypeVar("S", bound="ServiceSettings")


def _checked_allow_list(value: str) -> str:
    parse_allow_list(value)  # a bad entry stops start-up (ValueError names the entry)
    return value


# A setting that is an operator allow-list of the outbound policy (attesta_platform.outbound):
# comma-separated ADDRESS[/PREFIX]:PORT entries, checked when the settings load.
AllowList = Annotated[str, AfterValidator(_checked_allow_list)]


def _default_instance_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ATTESTA_", extra="ignore", populate_by_name=True)

    kafka_bootstrap_servers: str = Field(
        default="127.0.0.1:19092", validation_alias="KAFKA_BOOTSTRAP_SERVERS"
    )
    # Topics are created with this many partitions when the service declares them.
    kafka_partitions: int = Field(default=3, ge=1)
    # ... and this many replicas (1 = one broker; 3 on a cluster, see docs/scaling.md).
    kafka_replication_factor: int = Field(default=1, ge=1)
    # Messages of different keys one consumer handles at once (one key's always in order).
    # 1 unless a service's handlers are shown safe to run concurrently (the answer service's
    # default is 16; docs/benchmarks/foundation.md shows what 16 does to the chat round trip).
    kafka_consumer_concurrency: int = Field(default=1, ge=1)
    # Batches one batch consumer has in flight at once, never two of one partition (1: one
    # after the other). Order per partition and commit-after-outputs hold either way.
    kafka_batch_overlap: int = Field(default=1, ge=1)
    # Connection security of every Kafka client (attesta_platform.kafka.KafkaOptions).
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    kafka_sasl_mechanism: Literal["", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = ""
    kafka_sasl_username: str = ""
    kafka_sasl_password: str = ""
    kafka_ssl_cafile: str = ""
    kafka_ssl_certfile: str = ""
    kafka_ssl_keyfile: str = ""
    instance_id: str = Field(default_factory=_default_instance_id)
    log_level: str = "INFO"
    log_json: bool = True
    health_host: str = "127.0.0.1"
    health_port: int = Field(default=0, ge=0, le=65535)  # 0 = pick a free port (logged)
    # Transient-error retry policy of every consumer (bounded exponential backoff with jitter).
    retry_attempts: int = Field(default=6, ge=1)
    retry_initial_delay_s: float = Field(default=0.1, gt=0)
    retry_max_delay_s: float = Field(default=5.0, gt=0)
    dependency_timeout_s: float = Field(default=20.0, gt=0)
    # Shared secret between the gateway and the internal HTTP APIs (see attesta_platform.http).
    internal_token: str = ""
    # PostgreSQL superuser/admin URL, used by migrations and to create each service's role.
    pg_admin_url: str = Field(
        default="postgresql://attesta_admin:attesta-dev-only@127.0.0.1:15432/postgres",
        validation_alias="ATTESTA_PG_ADMIN_URL",
    )
    redis_url: str = Field(default="redis://127.0.0.1:16379/0", validation_alias="REDIS_URL")
    # The outbound policy's operator allow-list (attesta_platform.outbound), one for every
    # service that sends requests on a tenant's behalf (ground-truth fetches, engine calls):
    # comma-separated ADDRESS[/PREFIX]:PORT entries reachable although private or loopback.
    fetch_allow: AllowList = ""

    def outbound_policy(self) -> OutboundPolicy:
        return OutboundPolicy.from_setting(self.fetch_allow)


def app_database_url(admin_url: str, database: str, role: str, password: str) -> str:
    """A service's own database on the server of ``admin_url``, logged in as its app role: a
    service whose URL is not set explicitly follows ``ATTESTA_PG_ADMIN_URL`` (the server its
    migration created the database on), whatever port that is."""
    parts = urlsplit(admin_url)
    host = parts.hostname or "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{quote(role, safe='')}:{quote(password, safe='')}@{host}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, f"/{database}", parts.query, ""))


def load_settings(cls: type[S], **overrides: Any) -> S:
    """Build settings or exit(2) with the validation errors spelled out."""
    try:
        return cls(**overrides)  # pydantic validates the values
    except ValidationError as exc:
        lines = [f"invalid configuration for {cls.__name__}:"]
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            lines.append(f"  {loc}: {err['msg']}")
        print("\n".join(lines), file=sys.stderr)
        raise SystemExit(2) from None
