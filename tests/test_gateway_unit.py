"""Gateway rules without infrastructure: key format and hashing, Idempotency-Key parsing and
decisions, rate-limit verdicts, production settings, and the committed OpenAPI document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attesta_gateway.settings import DEV_SECRET, GatewaySettings
from attesta_gateway.domain import idempotency as idem
from attesta_gateway.domain.keys import StoredKey, key_digest, new_key, parse_key_id, verify
from attesta_gateway.domain.ratelimit import Limit, verdict
from attesta_gateway.service_layer.auth import credentials_from
from attesta_platform.http import ApiError
from tests.gateway_fakes import http_errors

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[1]


def test_keys_are_random_parsable_and_verified_by_hmac():
    key_id, plaintext = new_key()
    assert parse_key_id(plaintext) == key_id and len(key_id) == 16
    assert new_key()[1] != plaintext
    secret = b"s" * 32
    stored = StoredKey(key_id, "ws", "n", key_digest(secret, plaintext))
    assert verify(secret, plaintext, stored)
    assert not verify(b"other-secret-" * 3, plaintext, stored)  # digest depends on the secret
    assert not verify(secret, plaintext[:-1] + ("A" if plaintext[-1] != "A" else "B"), stored)
    from datetime import UTC, datetime

    revoked = StoredKey(key_id, "ws", "n", stored.digest, revoked_at=datetime.now(UTC))
    assert not verify(secret, plaintext, revoked)
    for bad in ("", "atk_", "atk_XYZ_abc", f"atk_{key_id}_short", plaintext + "x", " " + plaintext):
        assert parse_key_id(bad) is None


def test_credentials_come_from_bearer_or_x_api_key():
    assert credentials_from("Bearer abc", None) == "abc"
    assert credentials_from("bearer  abc ", None) == "abc"
    assert credentials_from(None, "xyz") == "xyz"
    assert credentials_from(None, None) is None
    with pytest.raises(ApiError) as exc, http_errors():
        credentials_from("Basic dTpw", None)
    assert exc.value.status == 401
    assert credentials_from("Bearer same", " same ") == "same"  # both headers, one key
    with pytest.raises(ApiError) as both, http_errors():  # two different keys: refused, neither is ignored
        credentials_from("Bearer good", "bad")
    assert both.value.status == 401 and "two different" in both.value.reason


def test_answers_that_ask_for_a_retry_are_not_stored_for_an_idempotency_key():
    assert idem.storable(201) and idem.storable(409) and idem.storable(422)
    assert not idem.storable(409, retry_later=True)  # e.g. refresh_in_progress + Retry-After
    assert not idem.storable(502) and not idem.storable(503)


@pytest.mark.parametrize("raw,key", [('"8e03978e-40d5-43e8-bc93-6894a57f9324"',
                                      "8e03978e-40d5-43e8-bc93-6894a57f9324"),
                                     ("plain-token", "plain-token"),
                                     ('"with \\"quote\\""', 'with "quote"')])
def test_idempotency_key_accepts_sf_strings_and_bare_tokens(raw, key):
    assert idem.parse_idempotency_key(raw) == key


@pytest.mark.parametrize("raw", ['"', '""', '"open', "two words", "x" * 256, "tab\there", "é"])
def test_idempotency_key_refuses_malformed_values(raw):
    with pytest.raises(idem.InvalidIdempotencyKey):
        idem.parse_idempotency_key(raw)


def test_idempotency_decisions_follow_the_draft():
    fp = idem.fingerprint("POST", "/v1/runs", "", b'{"a":1}')
    assert fp != idem.fingerprint("POST", "/v1/runs", "", b'{"a":2}')
    assert fp != idem.fingerprint("POST", "/v1/runsx", "", b'{"a":1}')
    done = idem.IdempotencyRecord(fp, False, idem.StoredResponse(202, "application/json", b"{}"))
    assert idem.decide(done, fp) is idem.Outcome.REPLAY
    assert idem.decide(done, "other") is idem.Outcome.MISMATCH
    assert idem.decide(idem.IdempotencyRecord(fp, True, None), fp) is idem.Outcome.IN_FLIGHT
    assert idem.storable(202) and idem.storable(404) and not idem.storable(503)


def test_rate_limit_verdicts_and_retry_after():
    lim = Limit(3, 60)
    assert verdict(3, lim, 59.2).allowed and not verdict(4, lim, 59.2).allowed
    assert verdict(4, lim, 59.2).retry_after == 60
    assert verdict(4, lim, 0.0).retry_after == 1  # never "retry after 0 s"


def test_production_settings_refuse_missing_or_weak_secrets():
    dev = GatewaySettings(_env_file=None)
    assert dev.problems() == [] and dev.secret_bytes() == DEV_SECRET.encode()
    weak = GatewaySettings(env="production", gateway_secret="short", internal_token="",
                           _env_file=None)
    problems = " ".join(weak.problems())
    assert "ATTESTA_GATEWAY_SECRET" in problems and "ATTESTA_INTERNAL_TOKEN" in problems
    assert "database password" in problems
    strong = GatewaySettings(env="production", gateway_secret="g" * 40, internal_token="i" * 40,
                             gateway_db_password="p" * 20, cors_origins="https://app.example",
                             _env_file=None)
    assert strong.problems() == []
    assert strong.cors_origin_list() == ["https://app.example"]
    assert GatewaySettings(env="production", gateway_secret=DEV_SECRET, internal_token="i" * 40,
                           gateway_db_password="p" * 20, _env_file=None).problems()


def test_committed_openapi_document_is_current():
    from attesta_gateway.cli import render_openapi

    committed = (ROOT / "docs" / "openapi.json").read_text(encoding="utf-8")
    assert committed == render_openapi(), (
        "docs/openapi.json is stale: run `attesta gateway openapi` and commit it")


def test_every_operation_documents_its_errors_with_the_shared_shape():
    doc = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))
    error_ref = "#/components/schemas/ErrorResponse"
    for path, item in doc["paths"].items():
        for method, op in item.items():
            statuses = {s for s in op["responses"] if s.startswith(("4", "5"))}
            if path.startswith("/v1/"):
                assert {"422", "429", "503"} <= statuses, (method, path, statuses)
            for status in statuses:
                schema = op["responses"][status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": error_ref}, (method, path, status)
            if path.startswith("/v1/") and not path.startswith(("/v1/public/", "/v1/chat")):
                assert "401" in statuses and op.get("security"), (method, path)
            if path.startswith("/v1/public/"):
                assert "security" not in op, path
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    run_post = doc["paths"]["/v1/runs"]["post"]
    header = [p for p in run_post["parameters"] if p["name"] == "Idempotency-Key"][0]
    assert header["required"] is True


def test_every_command_has_a_handler_and_the_bootstrap_binds_its_dependencies():
    from attesta_gateway.bootstrap import build_gateway
    from attesta_gateway.domain import commands
    from attesta_gateway.service_layer.handlers import HANDLERS
    from attesta_platform.bus import Message

    declared = {m for m in vars(commands).values()
                if isinstance(m, type) and issubclass(m, Message) and m is not Message}
    assert declared == set(HANDLERS) and len(declared) == 7
    # bootstrap refuses a handler whose dependency it was not given, so building is the check
    assert build_gateway(GatewaySettings(env="development")).bus.messages == declared
