"""Idempotency records in PostgreSQL (table ``idempotency_records``).

Why PostgreSQL and not Redis: a stored response must outlive a Redis restart or eviction
(``maxmemory`` policies drop keys), or a retried POST /v1/runs would create a second run; and
creating calls keep their guarantee while Redis, which only backs rate limits, is down.
One row per (workspace, key). Claiming a key is a single INSERT .. ON CONFLICT, so two
concurrent first requests cannot both proceed.
"""

from __future__ import annotations

from attesta_gateway.adapters.database import Database
from attesta_gateway.domain.idempotency import IdempotencyRecord, StoredResponse

# Takes the key when it is free, expired, or held by a crashed attempt with the same payload
# (its lock ran out): exactly one caller gets a row back.
_CLAIM = """
INSERT INTO idempotency_records AS r
    (workspace_id, idem_key, fingerprint, state, locked_until, expires_at)
VALUES ($1, $2, $3, 'in_flight', now() + make_interval(secs => $4),
        now() + make_interval(secs => $5))
ON CONFLICT (workspace_id, idem_key) DO UPDATE
SET fingerprint = EXCLUDED.fingerprint, state = 'in_flight', locked_until = EXCLUDED.locked_until,
    expires_at = EXCLUDED.expires_at, status = NULL, content_type = NULL, body = NULL,
    created_at = now()
WHERE r.expires_at < now()
   OR (r.state = 'in_flight' AND r.locked_until < now() AND r.fingerprint = EXCLUDED.fingerprint)
RETURNING 1
"""


class PostgresIdempotencyStore:
    def __init__(self, db: Database, ttl_s: float, lock_s: float) -> None:
        self._db, self._ttl, self._lock = db, ttl_s, lock_s

    async def claim(self, workspace_id: str, key: str, fingerprint: str) -> IdempotencyRecord | None:
        """None when this request now owns the key; else the record that holds it."""
        got = await self._db.fetchrow(_CLAIM, workspace_id, key, fingerprint,
                                      float(self._lock), float(self._ttl))
        if got is not None:
            return None
        r = await self._db.fetchrow(
            "SELECT fingerprint, state, status, content_type, body FROM idempotency_records "
            "WHERE workspace_id = $1 AND idem_key = $2", workspace_id, key)
        if r is None:  # deleted (abandoned) between the two statements: try once more
            got = await self._db.fetchrow(_CLAIM, workspace_id, key, fingerprint,
                                          float(self._lock), float(self._ttl))
            if got is not None:
                return None
            return IdempotencyRecord(fingerprint=fingerprint, in_flight=True, response=None)
        response = None
        if r["state"] == "completed":
            response = StoredResponse(r["status"], r["content_type"], bytes(r["body"]))
        return IdempotencyRecord(fingerprint=r["fingerprint"], in_flight=r["state"] != "completed",
                                 response=response)

    async def complete(self, workspace_id: str, key: str, response: StoredResponse) -> None:
        await self._db.execute(
            "UPDATE idempotency_records SET state = 'completed', status = $3, content_type = $4, "
            "body = $5, locked_until = NULL WHERE workspace_id = $1 AND idem_key = $2",
            workspace_id, key, response.status, response.content_type, response.body)

    async def release(self, workspace_id: str, key: str) -> None:
        """Forget an attempt that got no final answer, so the client may retry with the key."""
        await self._db.execute(
            "DELETE FROM idempotency_records WHERE workspace_id = $1 AND idem_key = $2 "
            "AND state = 'in_flight'", workspace_id, key)

    async def purge_expired(self) -> int:
        status = await self._db.execute("DELETE FROM idempotency_records WHERE expires_at < now()")
        return int(status.split()[-1])
