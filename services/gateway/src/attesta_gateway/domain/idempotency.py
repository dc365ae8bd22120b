"""Idempotency-Key rules (IETF httpapi "The Idempotency-Key HTTP Header Field" draft), pure.

- The header is a Structured Fields string (``Idempotency-Key: "8e03978e-..."``); a bare token
  is accepted too. 1-255 printable ASCII characters; anything else is a 400.
- A key is scoped to the caller's workspace and bound to a fingerprint of the request (method,
  path, query and the exact body bytes). Same key + same fingerprint after completion: replay the
  stored response. Same key + another fingerprint: 422. Same key while the first request is
  still in flight: 409.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from enum import Enum

MAX_KEY_LENGTH = 255
_BARE = re.compile(r"^[\x21-\x7e]{1,255}$")
_QUOTED = re.compile(r'^"((?:[\x20-\x21\x23-\x5b\x5d-\x7e]|\\["\\]){1,255})"$')


class InvalidIdempotencyKey(ValueError):
    pass


def parse_idempotency_key(raw: str) -> str:
    raw = raw.strip()
    m = _QUOTED.match(raw)
    if m:
        key = re.sub(r'\\(["\\])', r"\1", m.group(1))
    elif _BARE.match(raw) and '"' not in raw:
        key = raw
    else:
        raise InvalidIdempotencyKey(
            "Idempotency-Key must be a string of 1-255 printable ASCII characters, "
            'e.g. Idempotency-Key: "4f1c2a9e-..."')
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidIdempotencyKey("Idempotency-Key is longer than 255 characters")
    return key


def fingerprint(method: str, path: str, query: str, body: bytes) -> str:
    h = hashlib.sha256()
    for part in (method.upper().encode(), path.encode(), query.encode()):
        h.update(len(part).to_bytes(4, "big"))
        h.update(part)
    h.update(body)
    return h.hexdigest()


class Outcome(Enum):
    PROCEED = "proceed"  # this request owns the key: forward it, then store the response
    REPLAY = "replay"  # completed before with the same payload: answer the stored response
    IN_FLIGHT = "in_flight"  # 409
    MISMATCH = "mismatch"  # 422


@dataclass(frozen=True)
class StoredResponse:
    status: int
    content_type: str
    body: bytes


@dataclass(frozen=True)
class IdempotencyRecord:
    fingerprint: str
    in_flight: bool
    response: StoredResponse | None


def decide(existing: IdempotencyRecord, request_fingerprint: str) -> Outcome:
    """What to do when the key is already taken by ``existing`` (not expired, lock not stale)."""
    if existing.fingerprint != request_fingerprint:
        return Outcome.MISMATCH
    if existing.in_flight or existing.response is None:
        return Outcome.IN_FLIGHT
    return Outcome.REPLAY


def storable(status: int, retry_later: bool = False) -> bool:
    """Only final answers are stored: a 5xx (upstream down, timeout) frees the key for a retry,
    and so does an answer that asks to be retried later (``Retry-After``, e.g. 409 "a refresh of
    this brand is running"), or the retry would replay "busy" forever."""
    return status < 500 and not retry_later
