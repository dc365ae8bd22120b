"""The collector's configuration (environment ``ATTESTA_*``), validated at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator

from attesta_platform.settings import ServiceSettings, app_database_url


class CollectorSettings(ServiceSettings):
    # "production" refuses to start without ATTESTA_COLLECTOR_SECRETS_KEK (adapters/keys.py).
    env: Literal["development", "production"] = "development"
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
    # Engine secrets (adapters/keys.py): the key-encryption key, 32 bytes in base64. Unset in
    # development: a random one is made once in collector_secrets_kek_file; production refuses.
    collector_secrets_kek: SecretStr = SecretStr("")
    collector_secrets_kek_file: Path = Path(".state/collector/secrets-kek")
    # Earlier KEKs (comma-separated base64) that still open secrets wrapped before a rotation
    # (`attesta collector rewrap-secrets` re-wraps them under the current one).
    collector_secrets_previous_keks: SecretStr = SecretStr("")
    # Keys the operator provides to a workspace's engines, by name (engine field operator_key):
    # JSON {"<workspace>": {"<name>": "env:VARIABLE" | "file:/path"}}.
    collector_operator_keys: str = ""
    # How long a collector keeps an engine key it decrypted (a retired secret stops being sent
    # within this time).
    collector_key_cache_s: float = Field(default=10.0, ge=0, le=300)

    @field_validator("collector_operator_keys")
    @classmethod
    def _operator_keys_parse(cls, v: str) -> str:
        # imported here: the settings load without the adapters' crypto until a value is checked
        from attesta_collector.adapters.keys import parse_operator_keys

        parse_operator_keys(v)  # a malformed entry stops start-up (ValueError names it)
        return v

    def app_db_url(self) -> str:
        return self.collector_database_url or app_database_url(
            self.pg_admin_url, self.collector_database, self.collector_db_role,
            self.collector_db_password)
