"""Managing API keys: create (at most once per Idempotency-Key), revoke (never a workspace's
last admin through the API), list. The HTTP routes (``entrypoints/routers/keys.py``) and the
CLI reach these through the bus (``handlers.py``)."""

from __future__ import annotations

import json

from attesta_gateway.adapters.database import DatabaseUnavailable
from attesta_gateway.domain.commands import JSON, CreateKey, RevokeKey
from attesta_gateway.domain.idempotency import Outcome, StoredResponse, decide
from attesta_gateway.domain.keys import IssuedKey, Revocation, StoredKey, key_digest, new_key
from attesta_gateway.service_layer.errors import InFlight, KeyReused, Unavailable
from attesta_gateway.service_layer.unit_of_work import UnitOfWork


async def _issue(cmd: CreateKey, uow: UnitOfWork, secret: bytes) -> IssuedKey:
    key_id, plaintext = new_key()
    await uow.keys.add(StoredKey(key_id=key_id, workspace_id=cmd.workspace_id, name=cmd.name,
                                 digest=key_digest(secret, plaintext), role=cmd.role,
                                 created_by=cmd.actor))
    stored = await uow.keys.get(key_id)
    return IssuedKey(stored or StoredKey(key_id, cmd.workspace_id, cmd.name, "", role=cmd.role),
                     plaintext)


async def create(cmd: CreateKey, uow: UnitOfWork, secret: bytes) -> IssuedKey:
    """What the idempotency record keeps is the new key's id, never its secret: a replay
    answers with the same key, without the secret (``IssuedKey.plaintext`` None)."""
    if cmd.key is None:
        return await _issue(cmd, uow, secret)
    try:
        existing = await uow.idempotency.claim(cmd.workspace_id, cmd.key, cmd.fingerprint)
    except DatabaseUnavailable as exc:
        raise Unavailable("idempotency_store_unavailable", str(exc), retry_after=1) from exc
    if existing is not None:
        outcome = decide(existing, cmd.fingerprint)
        if outcome is Outcome.MISMATCH:
            raise KeyReused("idempotency_key_reused",
                            "this Idempotency-Key was already used with a different request; "
                            "use a new key for a new request")
        if outcome is Outcome.IN_FLIGHT:
            raise InFlight("idempotency_key_in_flight",
                           "a request with this Idempotency-Key is still being processed; "
                           "retry later", retry_after=1)
        assert existing.response is not None
        key_id = json.loads(existing.response.body)["key_id"]
        stored = await uow.keys.get(key_id)
        assert stored is not None, key_id  # keys are never deleted (no DELETE grant)
        return IssuedKey(stored, None, replayed=True)
    try:
        issued = await _issue(cmd, uow, secret)
    except BaseException:
        await uow.idempotency.release(cmd.workspace_id, cmd.key)
        raise
    record = json.dumps({"key_id": issued.key.key_id}).encode()
    try:
        await uow.idempotency.complete(cmd.workspace_id, cmd.key,
                                       StoredResponse(201, JSON, record))
    except DatabaseUnavailable:
        pass  # the key exists; a retry after the lock runs out makes another (revocable) one
    return issued


async def revoke(cmd: RevokeKey, uow: UnitOfWork) -> Revocation:
    if cmd.workspace_id is None:  # the operator (CLI): any key, the last admin too
        if await uow.keys.revoke(cmd.key_id):
            return Revocation.REVOKED
        stored = await uow.keys.get(cmd.key_id)
        return Revocation.NOT_FOUND if stored is None else Revocation.ALREADY_REVOKED
    return await uow.keys.revoke_in_workspace(cmd.workspace_id, cmd.key_id, by=cmd.actor)
