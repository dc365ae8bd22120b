"""Test helpers of the collector (its tests, the benchmark): a migrated temporary database with
its own app role, the catalog rows a test needs, and the outbound policy and keys a test's
engines run under. Each helper imports what it uses in its body (one reason for all of
them): importing one helper loads no adapter, driver or test server it does not need."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attesta_collector.adapters.engines import OutboundEngineChecks
    from attesta_collector.adapters.keys import EngineKeys, SecretBox
    from attesta_collector.service_layer.collecting import CollectorTopics
    from attesta_collector.service_layer.unit_of_work import UnitOfWork
    from attesta_testing.infra import MigratedDb

INTERNAL_TOKEN = "test-internal-token"


def allow_url(url: str) -> str:
    """The ``ATTESTA_FETCH_ALLOW`` entry of a local test server's URL (its address:port)."""
    from urllib.parse import urlsplit

    return urlsplit(url).netloc


def random_box() -> SecretBox:
    """A secret box with a random KEK (what ATTESTA_COLLECTOR_SECRETS_KEK gives a service)."""
    import os

    from attesta_collector.adapters.keys import SecretBox

    return SecretBox(os.urandom(32))


def engine_checks(allow: str = "", operator_keys: Mapping[str, Mapping[str, str]] | None = None,
                  environ: Mapping[str, str] | None = None) -> OutboundEngineChecks:
    """The create/update checks of engines, allowing ``allow`` (ADDRESS:PORT entries)."""
    import os

    from attesta_collector.adapters.engines import OutboundEngineChecks
    from attesta_collector.adapters.keys import OperatorKeys
    from attesta_platform.outbound import OutboundPolicy

    return OutboundEngineChecks(OutboundPolicy.from_setting(allow), OperatorKeys(
        operator_keys or {}, os.environ if environ is None else environ))


def engine_keys(new_uow: Callable[[], UnitOfWork], box: SecretBox | None = None) -> EngineKeys:
    """Call-time keys: the workspace's secrets (opened with ``box``), no operator keys."""
    from attesta_collector.adapters.keys import EngineKeys

    return EngineKeys(new_uow, box or random_box())


def migrated_database(admin_url: str,
                      prefix: str = "collector") -> AbstractAsyncContextManager[MigratedDb]:
    """A fresh database migrated by ``attesta collector migrate``'s code, with a unique app role
    (``attesta_testing.infra.migrated_database``)."""
    from attesta_collector.adapters.migrate import migrate
    from attesta_testing.infra import migrated_database as migrated

    return migrated(migrate, admin_url, prefix, "col")


def http_errors() -> AbstractContextManager[None]:
    """A domain error raised inside becomes the ``ApiError`` the HTTP edge answers it with
    (``entrypoints/http.py``), as a route's caller sees it."""
    # imported here, as every helper of this module: the helpers stay importable one by one
    from attesta_collector.entrypoints.http import api_error
    from attesta_collector.service_layer.errors import ServiceError
    from attesta_testing.edge import edge_errors

    return edge_errors(ServiceError, api_error)


def private_topics(prefix: str) -> CollectorTopics:
    """Every topic of the collector as a private copy ``<prefix>.<topic>`` (same contract), so
    a test or the benchmark runs beside the real system on a shared broker."""
    import dataclasses

    from attesta_collector.service_layer.collecting import CollectorTopics
    from attesta_testing.infra import alias_topic

    real = CollectorTopics()
    return CollectorTopics(**{f.name: alias_topic(getattr(real, f.name), prefix)
                              for f in dataclasses.fields(CollectorTopics)})


def run_once_on_alias_topics(argv: list[str]) -> None:
    """``attesta collector run-once`` on private copies of the collector's topics (prefix
    ``argv[0]``), for tests that kill it: ``python -m attesta_testing.collector PREFIX WS SCHED
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
