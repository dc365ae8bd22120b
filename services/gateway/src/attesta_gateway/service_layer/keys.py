"""Managing API keys: create (at most once per Idempotency-Key), revoke (never a workspace's
last admin through the API), list. The HTTP routes (``entrypoints/routers/keys.py``) and the
CLI reach these through the bus (``handlers.py``)."""

from __future__ import annotations

import json

from attesta_gateway.adapters.database import DatabaseUnavailable
from attesta_gateway.domain.commands import JSON, CreateKey, ListKeys, RevokeKey
from attesta_gateway.domain.idempotency import StoredResponse
from attesta_gateway.domain.keys import IssuedKey, Revocation, StoredKey, key_digest, new_key
from attesta_gateway.service_layer.forwarding import claim
from attesta_gateway.service_layer.unit_of_work import UnitOfWork


async def create_key(cmd: CreateKey, uow: UnitOfWork, secret: bytes) -> IssuedKey:
    """What the idempotency record keeps is the new key's id, never its secret: a replay
    answers with the same key, without the secret (``IssuedKey.plaintext`` None)."""
    if cmd.key is not None:
        replay = await claim(uow.idempotency, cmd.workspace_id, cmd.key, cmd.fingerprint)
        if replay is not None:
            replayed = json.loads(replay.body)["key_id"]
            stored = await uow.keys.get(replayed)
            assert stored is not None, replayed  # keys are never deleted (no DELETE grant)
            return IssuedKey(stored, None, replayed=True)
    key_id, plaintext = new_key()
    try:
        await uow.keys.add(StoredKey(key_id=key_id, workspace_id=cmd.workspace_id, name=cmd.name,
                                     digest=key_digest(secret, plaintext), role=cmd.role,
                                     created_by=cmd.actor))
        stored = await uow.keys.get(key_id)
    except BaseException:
        if cmd.key is not None:
            await uow.idempotency.release(cmd.workspace_id, cmd.key)
        raise
    issued = IssuedKey(stored or StoredKey(key_id, cmd.workspace_id, cmd.name, "", role=cmd.role),
                       plaintext)
    if cmd.key is not None:
        record = json.dumps({"key_id": key_id}).encode()
        try:
            await uow.idempotency.complete(cmd.workspace_id, cmd.key,
                                           StoredResponse(201, JSON, record))
        except DatabaseUnavailable:
            pass  # the key exists; a retry after the lock runs out makes another (revocable) one
    return issued


async def revoke_key(cmd: RevokeKey, uow: UnitOfWork) -> Revocation:
    if cmd.workspace_id is None:  # the operator (CLI): any key, the last admin too
        if await uow.keys.revoke(cmd.key_id):
            return Revocation.REVOKED
        stored = await uow.keys.get(cmd.key_id)
        return Revocation.NOT_FOUND if stored is None else Revocation.ALREADY_REVOKED
    return await uow.keys.revoke_in_workspace(cmd.workspace_id, cmd.key_id, by=cmd.actor)


async def list_keys(cmd: ListKeys, uow: UnitOfWork) -> list[StoredKey]:
    return await uow.keys.list(cmd.workspace_id)
