"""The classifier's configuration (environment ``ATTESTA_*``), validated at start-up."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, SecretStr

from attesta_classifier.domain.metrics import DEFAULT_MIN_N, DEFAULT_MIN_PROMPTS
from attesta_platform.outbound import OutboundPolicy
from attesta_platform.settings import AllowList, ServiceSettings, app_database_url


class ClassifierSettings(ServiceSettings):
    classifier_http_host: str = "127.0.0.1"
    classifier_http_port: int = Field(default=8081, ge=0, le=65535)
    # PostgreSQL: the service's own database and least-privilege login role.
    classifier_db_name: str = "attesta_classifier"
    classifier_db_role: str = "attesta_classifier_app"
    classifier_db_password: str = "attesta-classifier-dev-only"
    # Full app URL; when empty it is the admin URL's host/port with the app role and database.
    classifier_db_url: str = ""
    classifier_db_pool_max: int = Field(default=10, ge=2)
    # Live consumer: group, batch size and how long to wait to fill a batch.
    classifier_group: str = "classifier"
    classifier_batch_max: int = Field(default=500, ge=1)
    classifier_batch_wait_ms: int = Field(default=50, ge=0)
    # Batches of runs the live consumer has in flight at once, never two of one partition
    # (attesta_platform.consuming._Lanes): one batch's classification runs while the last one's
    # transaction waits for PostgreSQL (docs/benchmarks/classifier.md). The service's other
    # consumers keep ATTESTA_KAFKA_BATCH_OVERLAP (1).
    classifier_batch_overlap: int = Field(default=2, ge=1)
    # Backfill: smaller batches and a rate limit so live traffic is not starved.
    backfill_batch_max: int = Field(default=200, ge=1)
    backfill_max_runs_per_s: float = Field(default=500.0, gt=0)
    # Judge worker (ambiguous pairs): concurrency and retry backoff.
    judge_concurrency: int = Field(default=4, ge=1)
    judge_retry_initial_s: float = Field(default=5.0, gt=0)
    judge_retry_max_s: float = Field(default=600.0, gt=0)
    # Judge selection (read by attesta_classifier.adapters.judges.build_judge): the claim-checking
    # judge's exact checks alone ("offline"), the checks then a model for the claims they cannot
    # decide ("combined"), every claim to the model ("llm-claims", for measurement), or one
    # whole-answer verdict from a large remote model ("openai"). docs/classifier-accuracy.md.
    judge: Literal["offline", "combined", "llm-claims", "openai"] = "offline"
    llm_base_url: str = ""  # OpenAI-compatible endpoint; default OpenRouter (local: `attesta run llm`)
    llm_model: str = ""  # default openai/gpt-4o-mini
    # How the one-word claim verdict is forced: a JSON-schema enum (any endpoint) or a GBNF
    # grammar (llama.cpp's server, `attesta run llm`: fewer tokens).
    llm_constraint: Literal["json_schema", "gbnf"] = "json_schema"
    llm_api_key: SecretStr = SecretStr("")
    llm_timeout_s: float = Field(default=20.0, gt=0)
    judge_verdict_attempts: int = Field(default=3, ge=1)
    # "combined" / "llm-claims": ask an unsure "contradicted" again in other words (2026.12.18).
    # Off: the CONFABULATED labels it adds were under the 95% precision a label must reach (docs).
    judge_second_look: bool = False
    judge_timeout_s: float = Field(default=60.0, gt=0)  # inline judging (manual reclassify)
    verdict_cache: bool = True  # Redis verdict cache in front of the judge
    # Share of judge-decided pairs a person labels blind, for the published judge-human
    # agreement (docs/review.md); drawn by a hash of (run id, brand id), so reproducible.
    review_sample_share: float = Field(default=0.05, ge=0.0, le=1.0)
    verdict_cache_ttl_s: int | None = None
    # Ground-truth fetcher: its allow-list is the shared ATTESTA_FETCH_ALLOW (ServiceSettings,
    # attesta_platform.outbound), e.g. "127.0.0.1:8090" for the local demo sites.
    # One deadline for a whole ground-truth refresh (all fetches + the write): shorter than the
    # gateway's ATTESTA_UPSTREAM_TIMEOUT_S (10 s), so the caller always gets the refresh's answer.
    refresh_deadline_s: float = Field(default=8.0, gt=0)
    fetch_max_bytes: int = Field(default=2_000_000, ge=1024)
    fetch_timeout_s: float = Field(default=10.0, gt=0)
    fetch_max_redirects: int = Field(default=5, ge=0, le=20)
    # Below either, a metrics cell is marked underpowered instead of read as a figure, and an
    # alert rule never fires on it (docs/metrics.md "Underpowered cells"; the defaults' reasons
    # are in domain/metrics.py).
    metrics_min_n: int = Field(default=DEFAULT_MIN_N, ge=1)
    metrics_min_prompts: int = Field(default=DEFAULT_MIN_PROMPTS, ge=1)
    # The alerts' e-mail channel (adapters/notifiers.py): the operator's mail server.
    alert_smtp_host: str = "127.0.0.1"
    alert_smtp_port: int = Field(default=25, ge=1, le=65535)
    alert_smtp_starttls: bool = False
    alert_smtp_ca_file: str = ""
    alert_smtp_username: str = ""
    alert_smtp_password: str = Field(default="", repr=False)
    alert_mail_from: str = "Attesta alerts <alerts@attesta.invalid>"
    # Alert evaluation and delivery (docs/alerts.md "Settings"): how often the evaluator asks
    # for the last closed week (a week is evaluated within this long of closing); attempts of
    # one delivery (a lapsed claim counts) and the backoff between them (exponential with
    # jitter, a receiver's Retry-After as a floor); the claim's lease, which must outlast one
    # whole attempt (the notifier's 10 s HTTP or SMTP timeout), or a slow attempt is sent twice.
    alert_evaluation_interval_s: float = Field(default=300.0, gt=0)
    alert_delivery_attempts: int = Field(default=5, ge=1, le=50)
    alert_delivery_backoff_initial_s: float = Field(default=5.0, gt=0)
    alert_delivery_backoff_max_s: float = Field(default=600.0, gt=0)
    alert_delivery_lease_s: float = Field(default=60.0, ge=15)
    # ADDRESS:PORT pairs an alert channel may reach besides ATTESTA_FETCH_ALLOW (which every
    # outbound fetch shares): an on-premises receiver the ground-truth fetcher has no business
    # reaching (the demo's receiver: 127.0.0.1 in scripts/up.sh, the stack's subnet in compose).
    alert_allow: AllowList = ""

    def alert_outbound_policy(self) -> OutboundPolicy:
        """The outbound policy of alert channels: the shared allow-list and the alerts' own."""
        return OutboundPolicy.from_setting(
            ",".join(v for v in (self.fetch_allow, self.alert_allow) if v))

    def app_db_url(self) -> str:
        if self.classifier_db_url:
            return self.classifier_db_url
        return app_database_url(self.pg_admin_url, self.classifier_db_name,
                                self.classifier_db_role, self.classifier_db_password)

    def admin_db_url(self) -> str:
        parts = urlsplit(self.pg_admin_url)
        return urlunsplit(parts._replace(path=f"/{self.classifier_db_name}"))
