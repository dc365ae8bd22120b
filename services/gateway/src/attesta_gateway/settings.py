"""The gateway's configuration (environment ``ATTESTA_*``), validated at start-up: a production
gateway refuses to start on development secrets (``GatewaySettings.problems``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field

from attesta_platform.settings import ServiceSettings, app_database_url, load_settings

DEV_SECRET = "attesta-dev-only-gateway-secret-never-use-in-production"
DEV_DB_PASSWORD = "attesta-gateway-dev-only"
MIN_SECRET_CHARS = 32


class GatewaySettings(ServiceSettings):
    # "production" refuses to start without a strong secret and internal token (see problems()).
    env: Literal["development", "production"] = "development"
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8080, ge=0, le=65535)
    # uvicorn worker processes. Each is a full gateway instance (own Kafka reply group), so
    # chat replies still reach the process that holds the caller.
    http_workers: int = Field(default=1, ge=1, le=64)
    # uvicorn's trusted proxies for X-Forwarded-For (comma-separated IPs); empty: the socket peer
    # address is the client address used by per-client rate limits.
    forwarded_allow_ips: str = ""
    chat_timeout_s: float = Field(default=15.0, gt=0)
    # Production may close anonymous chat: then /v1/chat needs an API key like every other route.
    chat_require_key: bool = False
    # Chats waiting for their answer at once (issue #23): past either bound a chat is refused at
    # once with Retry-After (instead of queueing behind the others into a 504): 503 over the
    # instance's bound, 429 over the key's (shared by every instance, in Redis). Retrieval
    # answers one chat at a time per instance (~0.5 s on the full path here), so the instance's
    # bound is about what it gets through within the chat timeout, and a key's is small: each
    # chat of a burst is one more that every other workspace's chat waits behind.
    chat_max_in_flight: int = Field(default=32, ge=1)
    chat_max_in_flight_per_key: int = Field(default=2, ge=1)
    # HMAC key for API-key digests. Empty in development: a fixed dev secret, loudly logged.
    gateway_secret: str = ""
    # PostgreSQL (keys, idempotency records): own database and least-privilege role.
    gateway_db_name: str = "attesta_gateway"
    gateway_db_role: str = "attesta_gateway_app"
    gateway_db_password: str = DEV_DB_PASSWORD
    gateway_db_url: str = ""  # full app URL; empty: the admin URL's host with role/db above
    # Internal APIs behind the gateway.
    classifier_url: str = "http://127.0.0.1:8081"
    evidence_url: str = "http://127.0.0.1:8082"
    collector_url: str = "http://127.0.0.1:8085"
    upstream_timeout_s: float = Field(default=10.0, gt=0)
    upstream_connect_timeout_s: float = Field(default=1.0, gt=0)
    upstream_attempts: int = Field(default=3, ge=1, le=10)
    upstream_deadline_s: float = Field(default=20.0, gt=0)
    upstream_max_connections: int = Field(default=100, ge=1)
    # Rate limits: requests per window (fixed windows in Redis; see service_layer/limits.py).
    rate_limit_window_s: int = Field(default=60, ge=1)
    rate_limit_per_key: int = Field(default=600, ge=1)
    rate_limit_local_per_key: int = Field(default=120, ge=1)  # per instance, while Redis is down
    rate_limit_public_per_client: int = Field(default=120, ge=1)
    rate_limit_chat_per_client: int = Field(default=20, ge=1)
    # Chats per API key, on top of the key's general limit: a chat costs the whole pipeline
    # (retrieval, answer, a run), so a key gets a tenth of its request budget for them.
    rate_limit_chat_per_key: int = Field(default=60, ge=1)
    # Failed authentications per client address; over it, 429 before any key lookup.
    rate_limit_auth_failures_per_client: int = Field(default=30, ge=1)
    redis_timeout_s: float = Field(default=0.5, gt=0)
    # Largest lease of requests an instance takes from a shared counter at once (1: every
    # request asks Redis; see adapters/ratelimit.py).
    rate_limit_lease_max: int = Field(default=50, ge=1)
    rate_limit_prefix: str = "attesta:gateway:rl:"  # Redis key namespace (tests use their own)
    key_cache_ttl_s: float = Field(default=5.0, ge=0)
    # A key's last use is written at most once per this many seconds per key and instance.
    key_last_used_interval_s: float = Field(default=60.0, ge=0)
    idempotency_ttl_s: int = Field(default=86_400, ge=60)
    max_body_bytes: int = Field(default=2_000_000, ge=1024)
    # The SPA's built files (index.html + assets), served at "/" when set; unknown non-API paths
    # get index.html so client-side routes such as /verify load the app.
    static_dir: str = ""
    # Browser origins allowed by CORS (comma-separated, e.g. "https://app.example"); empty: none.
    cors_origins: str = ""
    # Slow clients: the request line + headers must arrive within this time of the connection
    # opening (or of the previous response), the whole body within body timeout of the app
    # asking for it; else 408 and the connection is closed (see entrypoints/guards.py).
    http_header_timeout_s: float = Field(default=10.0, gt=0)
    http_body_timeout_s: float = Field(default=30.0, gt=0)
    # Sent on every response. 'self' covers the web app's own scripts and styles (and vendored
    # libraries under frontend/); no inline script or style is allowed.
    content_security_policy: str = (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; font-src 'self'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'")
    # Interactive API docs (/docs, /redoc) on the public port: off unless asked for (the
    # contract is /openapi.json and docs/openapi.json).
    api_docs: bool = False
    # Prometheus metrics: on an operator port bound to metrics_host (0: none), and on the public
    # port only when public_metrics is true.
    metrics_port: int = Field(default=0, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"
    public_metrics: bool = False

    def app_db_url(self) -> str:
        if self.gateway_db_url:
            return self.gateway_db_url
        return app_database_url(self.pg_admin_url, self.gateway_db_name, self.gateway_db_role,
                                self.gateway_db_password)

    def secret_bytes(self) -> bytes:
        return (self.gateway_secret or DEV_SECRET).encode("utf-8")

    def cors_origin_list(self) -> list[str]:
        return [o.strip() for o in self.cors_origins.split(",") if o.strip()]

    def problems(self) -> list[str]:
        """Why these settings must not start a production gateway (empty: fine)."""
        if self.env != "production":
            return []
        found = []
        if len(self.gateway_secret) < MIN_SECRET_CHARS or self.gateway_secret == DEV_SECRET:
            found.append(f"ATTESTA_GATEWAY_SECRET must be set to at least {MIN_SECRET_CHARS} "
                         "random characters (e.g. `openssl rand -base64 48`)")
        if len(self.internal_token) < MIN_SECRET_CHARS:
            found.append(f"ATTESTA_INTERNAL_TOKEN must be set to at least {MIN_SECRET_CHARS} "
                         "random characters (the same value on classifier and evidence)")
        url = urlsplit(self.app_db_url())
        if not url.password or DEV_DB_PASSWORD in self.app_db_url():
            found.append("the gateway database password is the development default: set "
                         "ATTESTA_GATEWAY_DB_PASSWORD or ATTESTA_GATEWAY_DB_URL")
        if self.static_dir and not (Path(self.static_dir) / "index.html").is_file():
            found.append(f"ATTESTA_STATIC_DIR={self.static_dir} has no index.html")
        if "*" in self.cors_origin_list():
            found.append("ATTESTA_CORS_ORIGINS must list origins, not '*'")
        return found


def load_gateway_settings(**overrides: object) -> GatewaySettings:
    settings = load_settings(GatewaySettings, **overrides)
    problems = settings.problems()
    if problems:
        print("refusing to start the gateway in production:\n  " + "\n  ".join(problems),
              file=sys.stderr)
        raise SystemExit(2)
    return settings
