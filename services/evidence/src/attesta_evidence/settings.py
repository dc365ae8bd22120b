"""The evidence service's configuration (environment ``ATTESTA_*``), validated at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from attesta_platform.settings import ServiceSettings, app_database_url


class EvidenceSettings(ServiceSettings):
    env: Literal["development", "production"] = "development"
    # Unset: the database `attesta evidence migrate` made on ATTESTA_PG_ADMIN_URL's server.
    evidence_database_url: str | None = None
    # Used by `attesta evidence migrate` (with ATTESTA_PG_ADMIN_URL) to create the database/role.
    evidence_database: str = "attesta_evidence"
    evidence_db_role: str = "attesta_evidence"
    evidence_db_password: str = "attesta-evidence-dev-only"
    evidence_db_pool_size: int = Field(default=10, ge=2, le=100)
    evidence_http_host: str = "127.0.0.1"
    evidence_http_port: int = Field(default=8082, ge=0, le=65535)
    evidence_signing_key_file: Path = Path(".state/evidence/log-signing-key.pem")
    # UTF-8 bytes of one piece of evidence; larger input is dead-lettered (Kafka's default
    # message limit is about 1 MB anyway).
    evidence_max_content_bytes: int = Field(default=1_048_576, ge=1)
    # Whole HTTP request body (the check route's JSON); larger gets 413. JSON escaping can
    # triple the size of non-ASCII text, hence the margin over the content limit.
    evidence_max_body_bytes: int = Field(default=4_194_304, ge=1024)
    evidence_tree_head_interval_s: float = Field(default=1.0, gt=0)
    evidence_consumer_group: str = "evidence"
    # Where a brand-new consumer group starts: "earliest" stores the topics' whole history (the
    # point of an evidence store); "latest" skips it (tests and demos on a shared broker).
    evidence_consumer_offset_reset: Literal["earliest", "latest"] = "earliest"
    # Consumers per intake topic in this process (records in flight at once; up to the topic's
    # partition count is useful).
    evidence_intake_consumers: int = Field(default=3, ge=1, le=64)

    def app_db_url(self) -> str:
        return self.evidence_database_url or app_database_url(
            self.pg_admin_url, self.evidence_database, self.evidence_db_role,
            self.evidence_db_password)
