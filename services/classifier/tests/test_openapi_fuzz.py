"""schemathesis against the classifier's own OpenAPI over real HTTP: no 5xx, every status and
body as documented (the shared error shape included), with the internal token and a workspace
that owns a brand, a run and a history row (so some requests reach 200s)."""

from __future__ import annotations

from functools import partial
import asyncio
import hashlib
import itertools
import threading
import uuid

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode, checks

pytestmark = pytest.mark.integration

WORKSPACE = f"fuzz-{uuid.uuid4().hex[:8]}"


class LiveApi:
    """The real app on uvicorn in its own thread and event loop (schemathesis calls are
    synchronous), with its own app-role pool."""

    def __init__(self, app_url: str, token: str) -> None:
        self.app_url, self.token = app_url, token
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.port = 0
        self.server = None
        self.error: BaseException | None = None

    async def _serve(self) -> None:
        import uvicorn

        from attesta_classifier.adapters.fetcher import SafeFetcher
        from attesta_classifier.adapters.postgres import create_pool
        from attesta_classifier.bootstrap import build_heuristic
        from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
        from attesta_classifier.bootstrap import build_bus
        from attesta_classifier.domain.commands import AddManualFact, CreateBrand, RecordRuns
        from attesta_classifier.entrypoints.http import create_app
        from attesta_classifier.service_layer.pipeline import IncomingRun, record_runs
        from attesta_contracts.runs import RunRecorded
        from attesta_contracts import utc_now

        pool = await create_pool(self.app_url, max_size=3)
        heuristic = build_heuristic()
        bus = build_bus(partial(ClassifierUnitOfWork, pool), heuristic=heuristic,
                        fetcher=SafeFetcher(timeout_s=2.0))
        await bus.handle(CreateBrand(WORKSPACE, "Acme", "acme", domains=("acme.example",)))
        await bus.handle(AddManualFact(WORKSPACE, "acme", "manual", "Acme makes anvils.",
                                       "https://acme.example/", "fuzz"))
        answer = "See https://acme.example/anvils"
        at = utc_now()
        await record_runs(RecordRuns((IncomingRun(uuid.uuid4(), RunRecorded(
            run_id="fuzz-run", workspace_id=WORKSPACE, engine="e", model="m", prompt="anvils?",
            answer=answer, answer_sha256=hashlib.sha256(answer.encode()).hexdigest(),
            requested_at=at, answered_at=at), "fuzz"),), "fuzz", "live"),
            ClassifierUnitOfWork(pool), heuristic)
        app = create_app(bus, internal_token=self.token, database=pool)
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                                    lifespan="off"))
        task = asyncio.create_task(self.server.serve())
        while not self.server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        self.ready.set()
        await task
        await pool.close()

    def _run(self) -> None:
        try:
            self.loop.run_until_complete(self._serve())
        except BaseException as exc:  # noqa: BLE001 - surfaced by start()
            self.error = exc
            self.ready.set()

    def start(self) -> LiveApi:
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.ready.wait(60)
        if self.error is not None:
            raise self.error
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        self.thread.join(10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def fuzzed_api(classifier_db):
    api = LiveApi(classifier_db.app_url, "fuzz-token").start()
    try:
        yield api
    finally:
        api.stop()


def test_no_5xx_and_responses_as_documented(fuzzed_api):
    headers = {"X-Attesta-Internal-Token": "fuzz-token", "X-Attesta-Workspace": WORKSPACE,
               "X-Attesta-Actor": "fuzzer"}
    schema = schemathesis.openapi.from_url(f"{fuzzed_api.base_url}/openapi.json", headers=headers)
    operations = [result.ok() for result in schema.get_all_operations()]
    # Every route of the contract is fuzzed: schemathesis parsed each (path, method) it declares,
    # and the contract still holds the routes this test was written against.
    declared = {f"{method.upper()} {path}" for path, item in schema.raw_schema["paths"].items()
                for method in item if method in {"get", "post", "patch", "put", "delete"}}
    assert {operation.label for operation in operations} == declared
    assert {"POST /v1/brands", "GET /v1/runs", "GET /v1/metrics",
            "POST /v1/runs/{run_id}/reclassify"} <= declared
    statuses: list[int] = []
    unsatisfiable: list[str] = []
    for operation, mode in itertools.product(operations, [GenerationMode.POSITIVE,
                                                          GenerationMode.NEGATIVE]):
        takes_input = operation.path_parameters or operation.query or operation.body
        if mode is GenerationMode.NEGATIVE and not takes_input:
            continue

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=15, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def fuzz(case):
            response = case.call_and_validate(
                base_url=fuzzed_api.base_url, headers=headers,
                checks=[checks.not_a_server_error, checks.status_code_conformance,
                        checks.content_type_conformance, checks.response_schema_conformance,
                        checks.negative_data_rejection])
            statuses.append(response.status_code)

        try:
            fuzz()
        except Unsatisfiable:
            # Only string path parameters: every string is valid, nothing to make invalid.
            assert mode is GenerationMode.NEGATIVE, operation.label
            unsatisfiable.append(operation.label)
    assert all("{" in label for label in unsatisfiable), unsatisfiable
    assert len(statuses) >= len(operations) * 10
    assert {200, 404, 422} <= set(statuses), sorted(set(statuses))
