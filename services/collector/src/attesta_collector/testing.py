"""Test helpers of the collector (its tests, the benchmark): a migrated temporary database with
its own app role, and the catalog rows a test needs."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import asyncpg

INTERNAL_TOKEN = "test-internal-token"


@dataclass(frozen=True)
class CollectorDb:
    admin_url: str  # superuser, on the collector database
    app_url: str    # the least-privilege service role
    role: str


def with_user(url: str, user: str, password: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.split("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{host}"))


@contextlib.asynccontextmanager
async def migrated_database(admin_url: str, prefix: str = "collector"
                            ) -> AsyncIterator[CollectorDb]:
    """A fresh database migrated by ``attesta collector migrate``'s code, with a unique app
    role; both are dropped afterwards."""
    from attesta_collector.adapters.migrate import migrate
    from attesta_platform.testing import temp_database

    role = f"col_{uuid.uuid4().hex[:10]}"
    try:
        async with temp_database(prefix) as url:
            await migrate(admin_url, urlsplit(url).path.lstrip("/"), role, "test-pw")
            yield CollectorDb(url, with_user(url, role, "test-pw"), role)
    finally:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(f'DROP ROLE IF EXISTS "{role}"')
        finally:
            await conn.close()


def private_topics(prefix: str):
    """Every topic of the collector as a private copy ``<prefix>.<topic>`` (same contract), so
    a test or the benchmark runs beside the real system on a shared broker."""
    import dataclasses

    from attesta_collector.service_layer.collecting import CollectorTopics
    from attesta_platform.testing import alias_topic

    real = CollectorTopics()
    return CollectorTopics(**{f.name: alias_topic(getattr(real, f.name), prefix)
                              for f in dataclasses.fields(CollectorTopics)})


def run_once_on_alias_topics(argv: list[str]) -> None:
    """``attesta collector run-once`` on private copies of the collector's topics (prefix
    ``argv[0]``), for tests that kill it: ``python -m attesta_collector.testing PREFIX WS SCHED
    SLOT``. Settings come from the environment as in production."""
    import asyncio
    from datetime import datetime

    from attesta_collector.cli import _settings, run_once

    prefix, ws, schedule, slot = argv
    topics = private_topics(prefix)
    raise SystemExit(asyncio.run(run_once(_settings(), ws, schedule, datetime.fromisoformat(slot),
                                          progress=False, topics=topics)))


if __name__ == "__main__":
    import sys

    run_once_on_alias_topics(sys.argv[1:])
