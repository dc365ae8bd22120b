"""Asking an OpenAI-compatible chat-completions endpoint, with the engine's own limits.

Every fault becomes an ``EngineFault`` with a kind (domain.model): timeouts, 429 (Retry-After
honoured up to the engine's max backoff), 5xx, connection errors, malformed JSON and empty
answers are retried with exponential backoff and jitter (tenacity); other 4xx, a missing key
and an answer larger than the limit fail at once. The body is read as a stream and cut at
``max_body_bytes``, so a 5 MB answer costs at most that much memory.

The HTTP client is aiohttp (one ``engine_session()`` per process, shared by every engine): it
costs a fraction of httpx's CPU per request, which bounds a collector's throughput
(docs/benchmarks/collector.md).
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from attesta_collector.domain.model import (
    EngineAnswer,
    EngineFault,
    EngineSpec,
    FaultKind,
    parse_chat_completion,
    retry_after_seconds,
)


def read_key(spec: EngineSpec, environ: dict[str, str] | None = None) -> str | None:
    """The engine's key, read now from where the spec says (never stored, never returned)."""
    env = os.environ if environ is None else environ
    if spec.api_key_env:
        key = env.get(spec.api_key_env, "").strip()
        if not key:
            raise EngineFault(FaultKind.NO_KEY, f"environment variable {spec.api_key_env} is not set")
        return key
    if spec.api_key_file:
        try:
            key = Path(spec.api_key_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise EngineFault(FaultKind.NO_KEY, f"cannot read the key file: {exc.strerror}") from None
        if not key:
            raise EngineFault(FaultKind.NO_KEY, "the key file is empty")
        return key
    return None


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


def engine_session() -> aiohttp.ClientSession:
    """The process's client for every engine: many connections, no session-wide timeout (each
    engine's own ``timeout_s`` bounds every call), no cookies kept between engines."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=512, limit_per_host=0),
        timeout=aiohttp.ClientTimeout(total=None), cookie_jar=aiohttp.DummyCookieJar())


def openai_engines(session: aiohttp.ClientSession, *, max_body_bytes: int = 2_000_000,
                   max_answer_chars: int = 200_000) -> Callable[[EngineSpec], OpenAIEngine]:
    """The collector's engine clients: one per spec, all on ``session``."""
    return functools.partial(OpenAIEngine, client=session, max_body_bytes=max_body_bytes,
                             max_answer_chars=max_answer_chars)


class OpenAIEngine:
    """One engine's client: concurrency (semaphore), rate limit, timeout and retry policy."""

    def __init__(self, spec: EngineSpec, client: aiohttp.ClientSession, *, max_body_bytes: int,
                 max_answer_chars: int,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.spec = spec
        self.client = client
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
        key = read_key(spec)
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = {"model": spec.model, "messages": [{"role": "user", "content": prompt}],
                **spec.params}
        if spec.base_url is None:  # EngineSpec refuses an openai engine without one
            raise EngineFault(FaultKind.CLIENT_ERROR, "the engine has no base_url")
        url = spec.base_url.rstrip("/") + "/chat/completions"
        async with self.semaphore:
            await self.limiter.wait()
            started = time.perf_counter()
            try:
                raw = await asyncio.wait_for(self._post(url, body, headers), spec.timeout_s)
            except TimeoutError:
                raise EngineFault(FaultKind.TIMEOUT,
                                  f"no complete answer within {spec.timeout_s:g} s") from None
            except aiohttp.ClientError as exc:  # refused, reset, cut mid-body, bad HTTP
                raise EngineFault(FaultKind.CONNECTION, f"{type(exc).__name__}: {exc}") from None
            latency_ms = (time.perf_counter() - started) * 1000
        status, payload, retry_after = raw
        if status == 429:
            raise EngineFault(FaultKind.RATE_LIMITED, "HTTP 429 from the engine", retry_after)
        if status >= 500:
            raise EngineFault(FaultKind.SERVER_ERROR, f"HTTP {status} from the engine", retry_after)
        if status >= 400:
            snippet = payload[:300].decode("utf-8", "replace")
            raise EngineFault(FaultKind.CLIENT_ERROR, f"HTTP {status} from the engine: {snippet}")
        text, model, annotations, citations, usage = parse_chat_completion(
            payload, self.max_answer_chars)
        return EngineAnswer(text=text, model=model or spec.model, raw=payload,
                            annotations=annotations, citations=citations, usage=usage,
                            latency_ms=latency_ms)

    async def _post(self, url: str, body: dict[str, Any], headers: dict[str, str]
                    ) -> tuple[int, bytes, float | None]:
        async with self.client.post(url, data=orjson.dumps(body), headers=headers) as resp:
            chunks: list[bytes] = []
            size = 0
            async for chunk in resp.content.iter_chunked(1 << 16):
                size += len(chunk)
                if size > self.max_body_bytes:
                    raise EngineFault(FaultKind.TOO_LARGE,
                                      f"response body exceeds {self.max_body_bytes} bytes")
                chunks.append(chunk)
            return (resp.status, b"".join(chunks),
                    retry_after_seconds(resp.headers.get("retry-after")))
