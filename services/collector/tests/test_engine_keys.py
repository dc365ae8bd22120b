"""Engine keys without a database: the envelope encryption of secrets, the KEK's origin (made
once in development, required in production), operator keys, the catalog's rules for which key
an engine may name, and the key a call sends (in-memory unit of work)."""

from __future__ import annotations

import base64
import os
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest
from pydantic import SecretStr

from attesta_collector.adapters.keys import (
    EngineKeys,
    KeyConfigError,
    OperatorKeys,
    SecretBox,
    SecretUnreadable,
    parse_operator_keys,
    secret_box,
)
from attesta_collector.adapters.memory import CollectorState, InMemoryCollectorUnitOfWork
from attesta_collector.domain.commands import (
    CreateEngine,
    CreateSecret,
    ReplaceEngine,
    RetireSecret,
)
from attesta_collector.domain.keys import OPERATOR_KEY_UNUSABLE, SECRET_UNUSABLE
from attesta_collector.domain.model import EngineFault, EngineSpec, FaultKind
from attesta_collector.service_layer import catalog
from attesta_testing.collector import engine_checks, http_errors
from attesta_platform.http import ApiError
from attesta_contracts.api.collector import SecretSpec

pytestmark = pytest.mark.unit


def test_a_sealed_secret_opens_only_in_its_workspace_and_id_and_with_its_kek():
    box = SecretBox(os.urandom(32))
    sealed = box.seal("ws-a", "sec-1", "sk-live-123")
    assert b"sk-live-123" not in sealed.wrapped_key + sealed.ciphertext
    assert box.open("ws-a", "sec-1", sealed) == "sk-live-123"
    for ws, sid in (("ws-b", "sec-1"), ("ws-a", "sec-2")):  # a row copied elsewhere
        with pytest.raises(SecretUnreadable):
            box.open(ws, sid, sealed)
    with pytest.raises(SecretUnreadable):  # another operator's KEK
        SecretBox(os.urandom(32)).open("ws-a", "sec-1", sealed)
    tampered = sealed.__class__(sealed.kek_id, sealed.wrapped_key,
                                sealed.ciphertext[:-1] + bytes([sealed.ciphertext[-1] ^ 1]))
    with pytest.raises(SecretUnreadable):
        box.open("ws-a", "sec-1", tampered)
    # The same value sealed twice shares nothing (a data key and nonces per secret).
    again = box.seal("ws-a", "sec-1", "sk-live-123")
    assert again.ciphertext != sealed.ciphertext and again.wrapped_key != sealed.wrapped_key


def test_rotating_the_kek_rewraps_data_keys_and_keeps_ciphertexts():
    old_kek, new_kek = os.urandom(32), os.urandom(32)
    sealed = SecretBox(old_kek).seal("ws", "s", "v")
    rotated = SecretBox(new_kek, previous=(old_kek,))
    assert rotated.open("ws", "s", sealed) == "v"  # the previous KEK still opens it
    rewrapped = rotated.rewrap("ws", "s", sealed)
    assert rewrapped is not None and rewrapped.kek_id == rotated.kek_id != sealed.kek_id
    assert rewrapped.ciphertext == sealed.ciphertext
    assert SecretBox(new_kek).open("ws", "s", rewrapped) == "v"  # the old KEK can go now
    assert rotated.rewrap("ws", "s", rewrapped) is None


def test_the_kek_is_made_once_in_development_and_required_in_production(tmp_path):
    warned: list[str] = []
    path = tmp_path / "collector" / "secrets-kek"
    made = secret_box(kek="", previous="", kek_file=path, production=False, warn=warned.append)
    assert path.stat().st_mode & 0o777 == 0o600 and warned
    again = secret_box(kek="", previous="", kek_file=path, production=False, warn=warned.append)
    assert again.current == made.current and len(warned) == 1
    # Collectors starting at the same moment agree on one KEK (and leave no draft behind).
    shared = tmp_path / "race" / "secrets-kek"
    with ThreadPoolExecutor(8) as pool:
        boxes = list(pool.map(lambda _: secret_box(kek="", previous="", kek_file=shared,
                                                   production=False, warn=print), range(8)))
    assert len({b.current for b in boxes}) == 1 and os.listdir(shared.parent) == ["secrets-kek"]
    with pytest.raises(KeyConfigError, match="production never makes"):
        secret_box(kek="", previous="", kek_file=tmp_path / "none", production=True, warn=print)
    assert not (tmp_path / "none").exists()
    kek = base64.b64encode(os.urandom(32)).decode()
    assert secret_box(kek=kek, previous="", kek_file=path, production=True,
                      warn=print).current == base64.b64decode(kek)
    with pytest.raises(KeyConfigError, match="32 random bytes"):
        secret_box(kek="c2hvcnQ=", previous="", kek_file=path, production=True, warn=print)


def test_operator_keys_are_listed_per_workspace_and_read_the_same_when_unusable(tmp_path):
    key_file, multi_line = tmp_path / "k", tmp_path / "m"
    key_file.write_text("sk-from-file\n")
    multi_line.write_text("sk-1\nsk-2\n")
    keys = OperatorKeys(parse_operator_keys(
        '{"ws-a": {"env": "env:OPS_KEY", "file": "file:%s", "multi": "file:%s", '
        '"unset": "env:NOT_SET", "gone": "file:/nonexistent"}}' % (key_file, multi_line)),
        environ={"OPS_KEY": "sk-from-env", "ATTESTA_INTERNAL_TOKEN": "internal"})
    assert keys.read("ws-a", "env") == "sk-from-env"
    assert keys.read("ws-a", "file") == "sk-from-file"
    for ws, name in (("ws-a", "multi"), ("ws-a", "unset"), ("ws-a", "gone"),
                     ("ws-a", "ATTESTA_INTERNAL_TOKEN"), ("ws-b", "env")):
        assert keys.read(ws, name) is None, name
    for bad in ('[]', '{"ws": []}', '{"ws": {"k": "VAR"}}', '{"ws": {"k": "file:relative"}}',
                'not json'):
        with pytest.raises(ValueError, match="ATTESTA_COLLECTOR_OPERATOR_KEYS"):
            parse_operator_keys(bad)


@pytest.fixture
def new_uow():
    return partial(InMemoryCollectorUnitOfWork, CollectorState())


async def test_an_engine_names_only_a_live_secret_of_its_own_workspace(new_uow):
    box = SecretBox(os.urandom(32))
    checks = engine_checks("127.0.0.1:9", {"ws-a": {"ops": "env:OPS"}}, {"OPS": "sk-ops"})
    row = await catalog.create_secret(CreateSecret("ws-a", SecretSpec(
        name="prod", value=SecretStr("sk-live"))), new_uow(), box)
    assert set(row) == {"workspace_id", "secret_id", "name", "created_at", "retired_at"}
    with pytest.raises(ApiError) as dup, http_errors():
        await catalog.create_secret(CreateSecret("ws-a", SecretSpec(
            name="prod", value=SecretStr("other"))), new_uow(), box)
    assert dup.value.status == 409
    base = {"name": "e", "base_url": "http://127.0.0.1:9/v1"}
    await catalog.create_engine(CreateEngine("ws-a", EngineSpec(
        engine_id="e1", api_key_secret_id=row["secret_id"], **base)), new_uow(), checks)
    reasons = []
    for ws, secret_id in (("ws-b", row["secret_id"]), ("ws-b", "sec-nothing")):
        with pytest.raises(ApiError) as refused, http_errors():
            await catalog.create_engine(CreateEngine(ws, EngineSpec(
                api_key_secret_id=secret_id, **base)), new_uow(), checks)
        reasons.append((refused.value.status, refused.value.reason))
    assert reasons == [(422, SECRET_UNUSABLE)] * 2
    await catalog.create_engine(CreateEngine("ws-a", EngineSpec(operator_key="ops", **base)),
                                new_uow(), checks)
    for ws, name in (("ws-b", "ops"), ("ws-a", "OPS"), ("ws-a", "missing")):
        with pytest.raises(ApiError) as refused, http_errors():
            await catalog.create_engine(CreateEngine(ws, EngineSpec(operator_key=name, **base)),
                                        new_uow(), checks)
        assert (refused.value.status, refused.value.reason) == (422, OPERATOR_KEY_UNUSABLE)
    with pytest.raises(ApiError) as refused, http_errors():  # the outbound policy, at create and update
        await catalog.replace_engine(ReplaceEngine("ws-a", "e1", EngineSpec(
            name="e", base_url="http://127.0.0.1:8081/v1")), new_uow(), checks)
    assert refused.value.reason == "base_url: loopback address refused by the outbound policy"
    retired = await catalog.retire_secret(RetireSecret("ws-a", row["secret_id"]), new_uow())
    assert retired["retired_at"] is not None
    with pytest.raises(ApiError) as gone, http_errors():
        await catalog.create_engine(CreateEngine("ws-a", EngineSpec(
            api_key_secret_id=row["secret_id"], **base)), new_uow(), checks)
    assert gone.value.reason == SECRET_UNUSABLE
    with pytest.raises(ApiError) as other, http_errors():
        await catalog.retire_secret(RetireSecret("ws-b", row["secret_id"]), new_uow())
    assert other.value.status == 404


async def test_a_call_sends_its_workspace_secret_until_it_is_retired(new_uow):
    box = SecretBox(os.urandom(32))
    now = [0.0]
    keys = EngineKeys(new_uow, box, OperatorKeys({"ws-a": {"ops": "env:OPS"}}, {"OPS": "sk-o"}),
                      cache_s=10, clock=lambda: now[0])
    row = await catalog.create_secret(CreateSecret("ws-a", SecretSpec(
        name="k", value=SecretStr("sk-live"))), new_uow(), box)
    spec = EngineSpec(name="e", base_url="http://x.example/v1", api_key_secret_id=row["secret_id"])
    assert await keys.key_for("ws-a", spec) == "sk-live"
    assert await keys.key_for("ws-a", EngineSpec(name="e", base_url="http://x.example/v1",
                                                 operator_key="ops")) == "sk-o"
    assert await keys.key_for("ws-a", EngineSpec(name="e", base_url="http://x.example/v1")) is None
    with pytest.raises(EngineFault) as other_ws:
        await keys.key_for("ws-b", spec)
    assert other_ws.value.kind is FaultKind.NO_KEY and other_ws.value.reason == SECRET_UNUSABLE
    await catalog.retire_secret(RetireSecret("ws-a", row["secret_id"]), new_uow())
    assert await keys.key_for("ws-a", spec) == "sk-live"  # kept for cache_s
    now[0] = 11.0
    with pytest.raises(EngineFault) as retired:
        await keys.key_for("ws-a", spec)
    assert retired.value.reason == SECRET_UNUSABLE
