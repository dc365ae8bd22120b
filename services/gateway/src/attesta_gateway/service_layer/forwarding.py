"""Forwarding one API call to an internal service, with idempotency where the route wants it.

Upstream answers pass through as they are (status and body), except:
- a 401 from an internal API means the gateway's internal token is wrong: the caller's
  credentials were fine, so it becomes a 502 ``internal_auth_failed``;
- any other 5xx becomes 502 ``upstream_error`` (503 stays 503: "down, retry later");
- a body that is not JSON becomes 502 ``upstream_bad_response``.
"""

from __future__ import annotations

import json

from fastapi.responses import Response, StreamingResponse

from attesta_gateway.adapters.database import DatabaseUnavailable
from attesta_gateway.adapters.upstream import Upstream, UpstreamReply
from attesta_gateway.domain.idempotency import Outcome, StoredResponse, decide, storable
from attesta_gateway.service_layer.unit_of_work import IdempotencyRepository
from attesta_platform.http import ApiError, error_response

REPLAYED_HEADER = "Idempotent-Replayed"


JSON_ONLY = ("application/json",)


def to_response(upstream: Upstream, reply: UpstreamReply,
                media_types: tuple[str, ...] = JSON_ONLY) -> Response:
    """``media_types``: what a successful answer of this route may be (errors are always JSON);
    a route that exports e.g. CSV passes ``("text/csv", *JSON_ONLY)``."""
    status = reply.status
    if status == 401:
        return error_response(502, "internal_auth_failed",
                              f"{upstream.name} service refused the gateway's internal token "
                              "(ATTESTA_INTERNAL_TOKEN differs between gateway and service)")
    allowed = media_types if status < 400 else JSON_ONLY
    if not reply.content_type.startswith(allowed) and status != 204:
        return error_response(502, "upstream_bad_response",
                              f"{upstream.name} service answered {status} with "
                              f"{reply.content_type or 'no content type'}, not JSON")
    if status >= 500:
        reason = _upstream_reason(reply.content) or f"{upstream.name} service answered {status}"
        if status == 503:
            return error_response(503, "upstream_unavailable", reason,
                                  {"Retry-After": reply.retry_after or "1"})
        return error_response(502, "upstream_error", f"{upstream.name}: {reason}")
    # A "busy, retry later" answer (e.g. 409 refresh_in_progress) keeps its Retry-After.
    headers = {"Retry-After": reply.retry_after} if reply.retry_after else None
    media_type = "application/json" if media_types is JSON_ONLY else reply.content_type
    return Response(content=reply.content, status_code=status, media_type=media_type,
                    headers=headers)


def _upstream_reason(content: bytes) -> str | None:
    try:
        body = json.loads(content)
        return str(body["error"]["reason"])
    except (ValueError, KeyError, TypeError):
        return None


async def forward(upstream: Upstream, method: str, path: str, *, workspace: str | None,
                  actor: str | None = None, params: dict[str, object] | None = None,
                  body: bytes | None = None, media_types: tuple[str, ...] = JSON_ONLY,
                  actor_name: str | None = None) -> Response:
    reply = await upstream.request(method, path, workspace=workspace, actor=actor,
                                   params=params, body=body, actor_name=actor_name)
    return to_response(upstream, reply, media_types)


async def forward_stream(upstream: Upstream, path: str, *, workspace: str, actor: str | None,
                         params: dict[str, object] | None, media_types: tuple[str, ...],
                         actor_name: str | None = None) -> Response:
    """A GET whose answer is passed on while it arrives (exports); errors as ``forward``."""
    reply = await upstream.stream(path, workspace=workspace, actor=actor, params=params,
                                  actor_name=actor_name)
    if isinstance(reply, UpstreamReply):
        return to_response(upstream, reply, media_types)
    if not reply.content_type.startswith(media_types):
        await reply.chunks.aclose()
        return error_response(502, "upstream_bad_response",
                              f"{upstream.name} service answered {reply.status} with "
                              f"{reply.content_type or 'no content type'}, not one of "
                              f"{', '.join(media_types)}")
    headers = ({"Content-Disposition": reply.content_disposition}
               if reply.content_disposition else None)
    return StreamingResponse(reply.chunks, status_code=reply.status,
                             media_type=reply.content_type, headers=headers)


async def forward_idempotently(store: IdempotencyRepository, upstream: Upstream, *,
                               key: str | None, fingerprint: str, method: str, path: str,
                               workspace: str, actor: str, body: bytes | None,
                               params: dict[str, object] | None = None,
                               actor_name: str | None = None) -> Response:
    """Forward a creating POST at most once per (workspace, Idempotency-Key)."""
    if key is None:
        return await forward(upstream, method, path, workspace=workspace, actor=actor,
                             params=params, body=body, actor_name=actor_name)
    try:
        existing = await store.claim(workspace, key, fingerprint)
    except DatabaseUnavailable as exc:
        raise ApiError(503, "idempotency_store_unavailable", str(exc), {"Retry-After": "1"}) from exc
    if existing is not None:
        outcome = decide(existing, fingerprint)
        if outcome is Outcome.MISMATCH:
            raise ApiError(422, "idempotency_key_reused",
                           "this Idempotency-Key was already used with a different request "
                           "(method, path or body); use a new key for a new request")
        if outcome is Outcome.IN_FLIGHT:
            raise ApiError(409, "idempotency_key_in_flight",
                           "a request with this Idempotency-Key is still being processed; "
                           "retry later", {"Retry-After": "1"})
        stored = existing.response
        assert stored is not None
        return Response(content=stored.body, status_code=stored.status,
                        media_type=stored.content_type, headers={REPLAYED_HEADER: "true"})
    try:
        reply = await upstream.request(method, path, workspace=workspace, actor=actor,
                                       params=params, body=body, idempotency_key=key,
                                       actor_name=actor_name)
        response = to_response(upstream, reply)
    except BaseException:
        await _release_quietly(store, workspace, key)
        raise
    if storable(response.status_code, retry_later="retry-after" in response.headers):
        try:
            await store.complete(workspace, key, StoredResponse(
                response.status_code, response.media_type or "application/json",
                bytes(response.body)))
        except DatabaseUnavailable:
            # The effect happened; we could not record it. The lock runs out later and a
            # retry would be forwarded again with the same key (the upstream sees the key).
            pass
    else:
        await _release_quietly(store, workspace, key)
    return response


async def _release_quietly(store: IdempotencyRepository, workspace: str, key: str) -> None:
    try:
        await store.release(workspace, key)
    except DatabaseUnavailable:
        pass  # the lock expires on its own (locked_until)
