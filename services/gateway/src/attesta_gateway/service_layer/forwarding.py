"""Forwarding one API call to an internal service, with idempotency where the route wants it.

What comes back is a ``Reply`` (the service's answer as it is: status, body, type), a
``Streamed`` answer still arriving (exports), or, when the answer cannot be passed on, the
gateway's own ``BadUpstream`` / ``Unavailable`` failure in its place:
- a 401 from an internal API means the gateway's internal token is wrong: the caller's
  credentials were fine, so it is ``internal_auth_failed``;
- any other 5xx is ``upstream_error`` (a 503 stays ``upstream_unavailable``: "down, retry later");
- a body that is not of the route's media types is ``upstream_bad_response``.
The caller's own refusals (an Idempotency-Key in flight or reused, the store down) are raised.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from attesta_gateway.adapters.database import DatabaseUnavailable
from attesta_gateway.adapters.upstream import Upstream, UpstreamReply
from attesta_gateway.domain.commands import JSON, JSON_ONLY
from attesta_gateway.domain.idempotency import Outcome, StoredResponse, decide, storable
from attesta_gateway.service_layer.errors import BadUpstream, InFlight, KeyReused, Unavailable
from attesta_gateway.service_layer.unit_of_work import IdempotencyRepository

@dataclass(frozen=True)
class Reply:
    """A service's answer to pass on whole; ``replayed``: the stored answer to an earlier
    request with the same Idempotency-Key."""

    status: int
    content: bytes
    content_type: str
    retry_after: str | None = None
    replayed: bool = False


@dataclass(frozen=True)
class Streamed:
    """A service's 2xx answer passed on while it arrives."""

    status: int
    content_type: str
    content_disposition: str | None
    chunks: AsyncGenerator[bytes, None]


Failure = BadUpstream | Unavailable
Forwarded = Reply | Failure


def checked(service: str, reply: UpstreamReply,
            media_types: tuple[str, ...] = JSON_ONLY) -> Forwarded:
    """``reply`` if it can be passed on, else the failure to answer instead. ``media_types``:
    what a successful answer of this route may be (errors are always JSON); a route that
    exports e.g. CSV passes ``("text/csv", *JSON_ONLY)``."""
    status = reply.status
    if status == 401:
        return BadUpstream("internal_auth_failed",
                           f"{service} service refused the gateway's internal token "
                           "(ATTESTA_INTERNAL_TOKEN differs between gateway and service)")
    allowed = media_types if status < 400 else JSON_ONLY
    if not reply.content_type.startswith(allowed) and status != 204:
        return BadUpstream("upstream_bad_response",
                           f"{service} service answered {status} with "
                           f"{reply.content_type or 'no content type'}, not JSON")
    if status >= 500:
        reason = _upstream_reason(reply.content) or f"{service} service answered {status}"
        if status == 503:
            return Unavailable("upstream_unavailable", reason,
                               retry_after=reply.retry_after or "1")
        return BadUpstream("upstream_error", f"{service}: {reason}")
    # A "busy, retry later" answer (e.g. 409 refresh_in_progress) keeps its Retry-After.
    content_type = JSON if media_types == JSON_ONLY else reply.content_type
    return Reply(status, reply.content, content_type, reply.retry_after)


def _upstream_reason(content: bytes) -> str | None:
    try:
        body = json.loads(content)
        return str(body["error"]["reason"])
    except (ValueError, KeyError, TypeError):
        return None


async def forward(upstream: Upstream, method: str, path: str, *, workspace: str | None,
                  actor: str | None = None, params: dict[str, object] | None = None,
                  body: bytes | None = None, media_types: tuple[str, ...] = JSON_ONLY,
                  actor_name: str | None = None) -> Forwarded:
    reply = await upstream.request(method, path, workspace=workspace, actor=actor,
                                   params=params, body=body, actor_name=actor_name)
    return checked(upstream.name, reply, media_types)


async def forward_stream(upstream: Upstream, path: str, *, workspace: str, actor: str | None,
                         params: dict[str, object] | None, media_types: tuple[str, ...],
                         actor_name: str | None = None) -> Forwarded | Streamed:
    """A GET whose answer is passed on while it arrives (exports); errors as ``forward``."""
    reply = await upstream.stream(path, workspace=workspace, actor=actor, params=params,
                                  actor_name=actor_name)
    if isinstance(reply, UpstreamReply):
        return checked(upstream.name, reply, media_types)
    if not reply.content_type.startswith(media_types):
        await reply.chunks.aclose()
        return BadUpstream("upstream_bad_response",
                           f"{upstream.name} service answered {reply.status} with "
                           f"{reply.content_type or 'no content type'}, not one of "
                           f"{', '.join(media_types)}")
    return Streamed(reply.status, reply.content_type, reply.content_disposition, reply.chunks)


async def forward_idempotently(store: IdempotencyRepository, upstream: Upstream, *,
                               key: str | None, fingerprint: str, method: str, path: str,
                               workspace: str, actor: str, body: bytes | None,
                               params: dict[str, object] | None = None,
                               actor_name: str | None = None) -> Forwarded:
    """Forward a creating POST at most once per (workspace, Idempotency-Key)."""
    if key is None:
        return await forward(upstream, method, path, workspace=workspace, actor=actor,
                             params=params, body=body, actor_name=actor_name)
    try:
        existing = await store.claim(workspace, key, fingerprint)
    except DatabaseUnavailable as exc:
        raise Unavailable("idempotency_store_unavailable", str(exc), retry_after=1) from exc
    if existing is not None:
        outcome = decide(existing, fingerprint)
        if outcome is Outcome.MISMATCH:
            raise KeyReused("idempotency_key_reused",
                            "this Idempotency-Key was already used with a different request "
                            "(method, path or body); use a new key for a new request")
        if outcome is Outcome.IN_FLIGHT:
            raise InFlight("idempotency_key_in_flight",
                           "a request with this Idempotency-Key is still being processed; "
                           "retry later", retry_after=1)
        stored = existing.response
        assert stored is not None
        return Reply(stored.status, stored.body, stored.content_type, replayed=True)
    try:
        reply = await upstream.request(method, path, workspace=workspace, actor=actor,
                                       params=params, body=body, idempotency_key=key,
                                       actor_name=actor_name)
        result = checked(upstream.name, reply)
    except BaseException:
        await _release_quietly(store, workspace, key)
        raise
    if isinstance(result, Reply) and storable(result.status, retry_later=bool(result.retry_after)):
        try:
            await store.complete(workspace, key, StoredResponse(
                result.status, result.content_type, result.content))
        except DatabaseUnavailable:
            # The effect happened; we could not record it. The lock runs out later and a
            # retry would be forwarded again with the same key (the upstream sees the key).
            pass
    else:
        await _release_quietly(store, workspace, key)
    return result


async def _release_quietly(store: IdempotencyRepository, workspace: str, key: str) -> None:
    try:
        await store.release(workspace, key)
    except DatabaseUnavailable:
        pass  # the lock expires on its own (locked_until)
