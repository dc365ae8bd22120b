"""schemathesis against the evidence service's own OpenAPI, over real HTTP: no 5xx, every status
and body as documented (the shared error shape included)."""

from __future__ import annotations

import hashlib
import itertools

import asyncpg
import pytest
import schemathesis
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode, checks

from attesta_contracts.evidence import EvidenceRefKind
from attesta_evidence.adapters.postgres import EvidenceUnitOfWork
from attesta_evidence.domain.model import IncomingEvidence, Reference
from attesta_evidence.domain.commands import Intake, RecordEvidence
from attesta_evidence.service_layer.handlers import record_evidence
from attesta_platform.messaging import Messaging
from attesta_testing.evidence import LiveApi, migrated_database
from attesta_testing.infra import postgres_admin_url

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
async def fuzzed_api():
    # schemathesis makes one test per operation: one database and server serve them all.
    async with migrated_database(postgres_admin_url()) as db:
        pool = await asyncpg.create_pool(db.app_url, min_size=1, max_size=2)
        for i in range(3):  # a few real records, so some requests hit 200s
            text = f"seeded answer {i}"
            await record_evidence(RecordEvidence((Intake(IncomingEvidence.build(
                text, hashlib.sha256(text.encode()).hexdigest(), "text/plain; charset=utf-8",
                Reference(EvidenceRefKind.RUN, f"run-{i}", "ws"), 1 << 20), "c", None),)),
                EvidenceUnitOfWork(pool), Messaging("127.0.0.1:1", "t"))
        await pool.close()
        api = LiveApi(db.app_url, Ed25519PrivateKey.generate()).start()
        try:
            yield api
        finally:
            api.stop()


def test_no_5xx_and_responses_as_documented(fuzzed_api):
    schema = schemathesis.openapi.from_url(f"{fuzzed_api.base_url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 8  # every route of the contract is fuzzed
    statuses: list[int] = []
    for operation, mode in itertools.product(operations, [GenerationMode.POSITIVE,
                                                          GenerationMode.NEGATIVE]):
        takes_input = operation.path_parameters or operation.query or operation.body
        if mode is GenerationMode.NEGATIVE and not takes_input:
            continue  # nothing to make invalid (tree-head, public-key)

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=25, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def fuzz(case):
            response = case.call_and_validate(
                base_url=fuzzed_api.base_url,
                checks=[checks.not_a_server_error, checks.status_code_conformance,
                        checks.content_type_conformance, checks.response_schema_conformance,
                        checks.negative_data_rejection])
            statuses.append(response.status_code)

        fuzz()
    # it really exercised the routes: successes and each kind of refusal
    assert len(statuses) >= 8 * 2 * 10
    assert {200, 400, 404, 422} <= set(statuses), sorted(set(statuses))
