"""Fixtures of the classifier's platform tests: one migrated PostgreSQL database for the session
(tests isolate themselves by workspace), the app-role pool, the local brand-sites server and an
HTTP client on the real FastAPI app, connections as the owner and as the app role, and a batch
consumer run until a condition holds. Real PostgreSQL/Kafka only; nothing is mocked."""

from __future__ import annotations

import asyncio
import contextlib
import types
import uuid
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

from attesta_classifier.domain.model import Brand, Decision, Fact, Run

TOKEN = "test-internal-token"
APP_ROLE = "attesta_classifier_app"
APP_PASSWORD = "attesta-classifier-dev-only"


class StandInJudge:
    """A judge for the platform tests (the real ones are tested in test_judge*.py): answers
    DESCRIPTIVE citing every fact, or raises JudgeUnavailable while ``down`` is set."""

    model_name = "stand-in-judge"
    prompt_version = "stand-in-1"

    def __init__(self, down: bool = False) -> None:
        self.down = down
        self.calls = 0

    async def judge(self, *, run: Run, brand: Brand, facts: Sequence[Fact]) -> Decision:
        from attesta_classifier.adapters.judges import JudgeUnavailable

        self.calls += 1
        if self.down:
            raise JudgeUnavailable("stand-in judge is down")
        return Decision("DESCRIPTIVE", "stand-in: consistent with ground truth", "judge",
                        tuple(f.fact_id for f in facts[:2]), self.model_name, "", self.prompt_version)


@contextlib.asynccontextmanager
async def _migrated_database(prefix: str):
    """A fresh database migrated for the classifier's app role: admin URL, name and app URL."""
    from attesta_classifier.adapters.migrate import migrate
    from attesta_platform.settings import app_database_url
    from attesta_testing.infra import temp_database

    async with temp_database(prefix) as admin_url:
        name = urlsplit(admin_url).path.lstrip("/")
        await migrate(admin_url, name, APP_ROLE, APP_PASSWORD)
        yield types.SimpleNamespace(admin_url=admin_url, name=name,
                                    app_url=app_database_url(admin_url, name, APP_ROLE, APP_PASSWORD))


@pytest.fixture(scope="session")
async def classifier_db():
    async with _migrated_database("clsf") as db:
        yield db


@pytest.fixture(scope="module")
async def module_pool():
    """A migrated database of the module's own, for tests that read across workspaces (the judge
    worker claims every due pair in its database)."""
    from attesta_classifier.adapters.postgres import create_pool

    async with _migrated_database("clmod") as db:
        p = await create_pool(db.app_url, max_size=4)
        yield p
        await p.close()


@pytest.fixture(scope="session")
async def pool(classifier_db):
    from attesta_classifier.adapters.postgres import create_pool

    p = await create_pool(classifier_db.app_url, max_size=6)
    yield p
    await p.close()


@pytest.fixture(scope="session")
def sites():
    from attesta_kb_tools.sites import SiteServer

    with SiteServer() as server:
        yield server


@pytest.fixture(scope="session")
def heuristic():
    from attesta_classifier.bootstrap import build_heuristic

    return build_heuristic()


@pytest.fixture
def workspace() -> str:
    return f"ws-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def make_client(pool, heuristic, sites):
    """``make_client(workspace, judge=None, allow=<the sites server's 127.0.0.1:port>,
    **fetcher_kw)``."""
    from attesta_classifier.adapters.fetcher import SafeFetcher
    from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
    from attesta_platform.outbound import OutboundPolicy
    from attesta_classifier.bootstrap import build_bus
    from attesta_classifier.entrypoints.http import create_app

    clients: list[httpx.AsyncClient] = []

    def make(workspace: str | None, *, judge=None, allow: str | None = None,
             token: str = TOKEN, actor: str | None = None, refresh_deadline_s: float = 8.0,
             **fetcher_kw) -> httpx.AsyncClient:
        allow = f"127.0.0.1:{sites.port}" if allow is None else allow
        fetcher = SafeFetcher(OutboundPolicy.from_setting(allow),
                              **({"timeout_s": 5.0} | fetcher_kw))
        bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic, fetcher=fetcher,
                        judge=judge, judge_timeout_s=5.0, refresh_deadline_s=refresh_deadline_s)
        app = create_app(bus, internal_token=TOKEN, database=pool)
        headers = {"X-Attesta-Internal-Token": token}
        if workspace is not None:
            headers["X-Attesta-Workspace"] = workspace
        if actor is not None:
            headers["X-Attesta-Actor"] = actor
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                   base_url="http://classifier.test", headers=headers)
        clients.append(client)
        return client

    yield make


@pytest.fixture
def lumora_body(sites):
    """A brand body for Lumora with two real sources on the local sites server."""
    return {"brand_id": "lumora", "name": "Lumora Therapeutics", "aliases": ["Lumora", "Lumora Tx"],
            "domains": ["lumora.example"],
            "sources": [sites.url("https://lumora.example/about"),
                        sites.url("https://lumora.example/leadership")]}


@pytest.fixture
def stand_in_judge():
    """``stand_in_judge(down=False)`` -> a StandInJudge."""
    return StandInJudge


@pytest.fixture
async def admin_conn(classifier_db):
    """A connection to the session's database as its owner (a superuser here)."""
    conn = await asyncpg.connect(classifier_db.admin_url)
    yield conn
    await conn.close()


@pytest.fixture
async def app_conn(classifier_db):
    """A connection to the session's database as the classifier's app role."""
    conn = await asyncpg.connect(classifier_db.app_url)
    yield conn
    await conn.close()


async def _consume_until(consumer, done: Callable[[], Awaitable[bool]],
                         timeout_s: float = 60.0) -> None:
    """Runs a started ``Messaging`` batch consumer until ``await done()`` holds, then stops it
    and waits for its last batch to end."""
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await done():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.2)
    stop.set()
    await task


@pytest.fixture(scope="session")
def consume_until():
    """``await consume_until(consumer, done, timeout_s=60.0)``."""
    return _consume_until
