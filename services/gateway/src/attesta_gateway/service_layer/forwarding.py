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
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass

from attesta_gateway.adapters.database import DatabaseUnavailable
from attesta_gateway.adapters.upstream import Upstream, UpstreamReply
from attesta_gateway.domain.commands import JSON, JSON_ONLY, Forward, ForwardOnce, StreamExport
from attesta_gateway.domain.idempotency import Outcome, StoredResponse, decide, storable
from attesta_gateway.service_layer.errors import BadUpstream, InFlight, KeyReused, Unavailable
from attesta_gateway.service_layer.unit_of_work import IdempotencyRepository, UnitOfWork

Upstreams = Callable[[str], Upstream]  # the internal service of a name


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


async def forward(cmd: Forward, upstream: Upstreams) -> Forwarded:
    up = upstream(cmd.service)
    reply = await up.request(cmd.method, cmd.path, workspace=cmd.workspace, actor=cmd.actor,
                             params=_params(cmd.params), body=cmd.body, actor_name=cmd.actor_name)
    return checked(up.name, reply, cmd.media_types)


async def stream_export(cmd: StreamExport, upstream: Upstreams) -> Forwarded | Streamed:
    """A GET whose answer is passed on while it arrives (exports); errors as ``forward``."""
    up = upstream(cmd.service)
    reply = await up.stream(cmd.path, workspace=cmd.workspace, actor=cmd.actor,
                            params=_params(cmd.params), actor_name=cmd.actor_name)
    if isinstance(reply, UpstreamReply):
        return checked(up.name, reply, cmd.media_types)
    if not reply.content_type.startswith(cmd.media_types):
        await reply.chunks.aclose()
        return BadUpstream("upstream_bad_response",
                           f"{up.name} service answered {reply.status} with "
                           f"{reply.content_type or 'no content type'}, not one of "
                           f"{', '.join(cmd.media_types)}")
    return Streamed(reply.status, reply.content_type, reply.content_disposition, reply.chunks)


async def forward_once(cmd: ForwardOnce, uow: UnitOfWork, upstream: Upstreams) -> Forwarded:
    """Forward a creating POST at most once per (workspace, Idempotency-Key)."""
    store, key, up = uow.idempotency, cmd.key, upstream(cmd.service)
    if key is not None:
        existing = await claim(store, cmd.workspace, key, cmd.fingerprint, " (method, path or body)")
        if existing is not None:
            return Reply(existing.status, existing.body, existing.content_type, replayed=True)
    try:
        reply = await up.request("POST", cmd.path, workspace=cmd.workspace, actor=cmd.actor,
                                 body=cmd.body, idempotency_key=key, actor_name=cmd.actor_name)
        result = checked(up.name, reply)
    except BaseException:
        if key is not None:
            await _release_quietly(store, cmd.workspace, key)
        raise
    if key is None:
        return result
    if isinstance(result, Reply) and storable(result.status, retry_later=bool(result.retry_after)):
        try:
            await store.complete(cmd.workspace, key, StoredResponse(
                result.status, result.content_type, result.content))
        except DatabaseUnavailable:
            # The effect happened; we could not record it. The lock runs out later and a
            # retry would be forwarded again with the same key (the upstream sees the key).
            pass
    else:
        await _release_quietly(store, cmd.workspace, key)
    return result


async def claim(store: IdempotencyRepository, workspace: str, key: str, fingerprint: str,
                compared: str = "") -> StoredResponse | None:
    """Claim ``key`` for this request: None when it is new (now locked), else the stored answer
    to replay; raises when the store is down, the key is in flight or was used for another
    request (``compared``: what tells requests apart, for the reason)."""
    try:
        existing = await store.claim(workspace, key, fingerprint)
    except DatabaseUnavailable as exc:
        raise Unavailable("idempotency_store_unavailable", str(exc), retry_after=1) from exc
    if existing is None:
        return None
    outcome = decide(existing, fingerprint)
    if outcome is Outcome.MISMATCH:
        raise KeyReused("idempotency_key_reused",
                        f"this Idempotency-Key was already used with a different request"
                        f"{compared}; use a new key for a new request")
    if outcome is Outcome.IN_FLIGHT:
        raise InFlight("idempotency_key_in_flight",
                       "a request with this Idempotency-Key is still being processed; "
                       "retry later", retry_after=1)
    assert existing.response is not None
    return existing.response


async def _release_quietly(store: IdempotencyRepository, workspace: str, key: str) -> None:
    try:
        await store.release(workspace, key)
    except DatabaseUnavailable:
        pass  # the lock expires on its own (locked_until)


def _params(params: Mapping[str, object] | None) -> dict[str, object] | None:
    return None if params is None else dict(params)
