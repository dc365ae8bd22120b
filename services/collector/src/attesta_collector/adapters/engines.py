"""Asking an OpenAI-compatible chat-completions endpoint, with the engine's own limits.

Every fault becomes an ``EngineFault`` with a kind (domain.model): timeouts, 429 (Retry-After
honoured up to the engine's max backoff), 5xx, connection errors, malformed JSON and empty
answers are retried with exponential backoff and jitter (tenacity); other 4xx, 3xx, a missing
key and an answer larger than the limit fail at once. The body is read as a stream and cut at
``max_body_bytes``, so a 5 MB answer costs at most that much memory.

Where an engine may connect is the system's one outbound policy (attesta_platform.outbound),
checked at create and update (``OutboundEngineChecks``) and at every call:
- the URL's shape, and its address when the host is an IP literal, before anything else
  (aiohttp never resolves an IP literal, so its resolver could not see it);
- a host name through ``PolicyResolver``, the connector's resolver: every address is checked
  and aiohttp connects only to the addresses it returned (the check and the connection use the
  same answer: no rebinding window, and aiohttp's DNS cache only ever holds checked answers).
  Chosen over rewriting the URL to the IP (the classifier's way with httpx) because it keeps
  aiohttp's connection pool, DNS cache and TLS host checks exactly as they are;
- redirects are not followed (a 3xx is a ``client_error``): a 307/308 would replay the POST,
  with its key, to wherever the Location points;
- only the status code reaches the tenant: no upstream error body and no connection error text
  (which can quote what the server sent) goes into a reason.

The HTTP client is aiohttp (one ``EngineHttp`` per process, shared by every engine): it costs a
fraction of httpx's CPU per request, which bounds a collector's throughput
(docs/benchmarks/collector.md).
"""

from __future__ import annotations

import asyncio
import functools
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

import aiohttp
import orjson
from aiohttp.abc import AbstractResolver, ResolveResult
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from attesta_collector.adapters.keys import OperatorKeys
from attesta_collector.domain.model import (
    EngineAnswer,
    EngineFault,
    EngineSpec,
    FaultKind,
    parse_chat_completion,
    retry_after_seconds,
)
from attesta_platform.outbound import HostUnresolved, OutboundPolicy, OutboundRefused


class KeySource(Protocol):
    """The key an engine sends (``adapters.keys.EngineKeys``); ``EngineFault`` ``no_key``
    when its secret or operator key cannot be used."""

    async def key_for(self, workspace_id: str, spec: EngineSpec) -> str | None: ...


class PolicyResolver(AbstractResolver):
    """aiohttp's resolver under the outbound policy: every address of the host is checked, and
    only checked addresses are returned (so only they are connected to)."""

    def __init__(self, policy: OutboundPolicy) -> None:
        self.policy = policy

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        return [ResolveResult(hostname=host, host=str(ip), port=port,
                              family=socket.AF_INET6 if ip.version == 6 else socket.AF_INET,
                              proto=0, flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV)
                for ip in await self.policy.resolve(host, port)]

    async def close(self) -> None:
        return None


@dataclass
class EngineHttp:
    """The process's client for every engine and the policy its connections are made under:
    many connections, no session-wide timeout (each engine's own ``timeout_s`` bounds every
    call), no cookies kept between engines, no proxy from the environment."""

    session: aiohttp.ClientSession
    policy: OutboundPolicy

    async def close(self) -> None:
        await self.session.close()

    async def __aenter__(self) -> EngineHttp:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()


def engine_http(policy: OutboundPolicy) -> EngineHttp:
    connector = aiohttp.TCPConnector(limit=512, limit_per_host=0,
                                     resolver=PolicyResolver(policy))
    return EngineHttp(aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=None),
        cookie_jar=aiohttp.DummyCookieJar(), trust_env=False), policy)


@dataclass(frozen=True)
class OutboundEngineChecks:
    """What an engine may name, checked at create and update (``EngineChecks``)."""

    policy: OutboundPolicy
    operator: OperatorKeys

    async def endpoint_refusal(self, base_url: str) -> str | None:
        try:
            await self.policy.check(base_url)
        except OutboundRefused as exc:
            return exc.public_reason
        except HostUnresolved:
            return None  # cannot be judged now; every call checks again
        return None

    def operator_key_available(self, workspace_id: str, name: str) -> bool:
        return self.operator.read(workspace_id, name) is not None


class RateLimiter:
    """At most ``rate`` calls per second from this process (evenly spaced starts)."""

    def __init__(self, rate: float | None) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


def openai_engines(http: EngineHttp, keys: KeySource, *, max_body_bytes: int = 2_000_000,
                   max_answer_chars: int = 200_000) -> Callable[[str, EngineSpec], OpenAIEngine]:
    """The collector's engine clients: one per (workspace, spec), all on ``http``."""
    return functools.partial(OpenAIEngine, http=http, keys=keys, max_body_bytes=max_body_bytes,
                             max_answer_chars=max_answer_chars)


class OpenAIEngine:
    """One engine's client: concurrency (semaphore), rate limit, timeout and retry policy."""

    def __init__(self, workspace_id: str, spec: EngineSpec, http: EngineHttp, keys: KeySource,
                 *, max_body_bytes: int, max_answer_chars: int,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.workspace_id = workspace_id
        self.spec = spec
        self.http = http
        self.keys = keys
        self.max_body_bytes = max_body_bytes
        self.max_answer_chars = max_answer_chars
        self.semaphore = asyncio.Semaphore(spec.concurrency)
        self.limiter = RateLimiter(spec.rate_limit_per_s)
        self.sleep = sleep

    async def ask(self, prompt: str, on_attempt: Callable[[int, EngineFault | None], None]
                  | None = None) -> tuple[EngineAnswer, int]:
        """The answer and the number of attempts it took; raises the last ``EngineFault``."""
        r = self.spec.retry
        attempts = 0

        def wait(state: RetryCallState) -> float:  # Retry-After (429/503) wins over the backoff, capped
            exc = state.outcome.exception() if state.outcome else None
            base = wait_exponential_jitter(multiplier=r.initial_backoff_s, max=r.max_backoff_s)(state)
            if isinstance(exc, EngineFault) and exc.retry_after_s is not None:
                return min(max(exc.retry_after_s, base), r.max_backoff_s)
            return base

        retrying = AsyncRetrying(
            stop=stop_after_attempt(r.attempts), wait=wait, sleep=self.sleep, reraise=True,
            retry=retry_if_exception(lambda e: isinstance(e, EngineFault) and e.retryable))
        async for attempt in retrying:
            with attempt:
                attempts += 1
                try:
                    answer = await self._once(prompt)
                except EngineFault as fault:
                    if on_attempt:
                        on_attempt(attempts, fault)
                    raise
        return answer, attempts

    async def _once(self, prompt: str) -> EngineAnswer:
        spec = self.spec
        if spec.base_url is None:  # EngineSpec refuses an openai engine without one
            raise EngineFault(FaultKind.CLIENT_ERROR, "the engine has no base_url")
        url = spec.base_url.rstrip("/") + "/chat/completions"
        try:
            self.http.policy.precheck(url)  # before the key is even looked up
        except OutboundRefused as exc:
            raise EngineFault(FaultKind.CLIENT_ERROR, f"base_url: {exc.public_reason}") from None
        key = await self.keys.key_for(self.workspace_id, spec)
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = {"model": spec.model, "messages": [{"role": "user", "content": prompt}],
                **spec.params}
        async with self.semaphore:
            await self.limiter.wait()
            started = time.perf_counter()
            try:
                raw = await asyncio.wait_for(self._post(url, body, headers), spec.timeout_s)
            except OutboundRefused as exc:  # the resolver refused an address of the host
                raise EngineFault(FaultKind.CLIENT_ERROR,
                                  f"base_url: {exc.public_reason}") from None
            except HostUnresolved:
                raise EngineFault(FaultKind.CONNECTION,
                                  "the engine's host name does not resolve") from None
            except TimeoutError:
                raise EngineFault(FaultKind.TIMEOUT,
                                  f"no complete answer within {spec.timeout_s:g} s") from None
            except aiohttp.ClientError as exc:  # refused, reset, cut mid-body, bad HTTP
                # The class only: aiohttp's message can quote what the server sent.
                raise EngineFault(FaultKind.CONNECTION, "the engine could not be reached or the "
                                  f"connection broke ({type(exc).__name__})") from None
            latency_ms = (time.perf_counter() - started) * 1000
        status, payload, retry_after = raw
        if status == 429:
            raise EngineFault(FaultKind.RATE_LIMITED, "HTTP 429 from the engine", retry_after)
        if status >= 500:
            raise EngineFault(FaultKind.SERVER_ERROR, f"HTTP {status} from the engine", retry_after)
        if 300 <= status < 400:
            raise EngineFault(FaultKind.CLIENT_ERROR,
                              f"HTTP {status} from the engine (redirects are not followed)")
        if status >= 400:  # the status only: an error body is the upstream's, not the tenant's
            raise EngineFault(FaultKind.CLIENT_ERROR, f"HTTP {status} from the engine")
        parsed = parse_chat_completion(payload, self.max_answer_chars)
        return EngineAnswer(text=parsed.text, model=parsed.model or spec.model, raw=payload,
                            annotations=parsed.annotations, citations=parsed.citations,
                            usage=parsed.usage, latency_ms=latency_ms, reported=parsed.reported)

    async def _post(self, url: str, body: dict[str, Any], headers: dict[str, str]
                    ) -> tuple[int, bytes, float | None]:
        async with self.http.session.post(url, data=orjson.dumps(body), headers=headers,
                                          allow_redirects=False) as resp:
            retry_after = retry_after_seconds(resp.headers.get("retry-after"))
            if not 200 <= resp.status < 300:  # only the status is used: the body is not read
                return resp.status, b"", retry_after
            chunks: list[bytes] = []
            size = 0
            async for chunk in resp.content.iter_chunked(1 << 16):
                size += len(chunk)
                if size > self.max_body_bytes:
                    raise EngineFault(FaultKind.TOO_LARGE,
                                      f"response body exceeds {self.max_body_bytes} bytes")
                chunks.append(chunk)
            return resp.status, b"".join(chunks), retry_after
