"""One client for OpenAI-compatible chat-completions endpoints (OpenRouter by default).

Used by the answer service's LLM generator and the classifier's LLM judge. It asks for
structured output (``response_format: json_schema``) and returns the parsed JSON object, or
raises one of two errors whose *class* says what the caller should do:

- ``LLMUnavailable`` (a ``TransientError``): timeouts, connection failures, HTTP 429 and 5xx,
  after bounded retries with exponential backoff and jitter (``Retry-After`` honoured, capped).
- ``LLMBadOutput`` (a ``PermanentError``): the endpoint answered, but not with a JSON object
  (malformed JSON, no choices, refusal, 4xx other than 429). Retried too — a model's malformed
  output is often a one-off — and then raised.

The caller validates the object against its own schema: this module knows nothing of answers
or verdicts. ``complete_choice`` asks for one word out of a fixed list (a judge's one-word
verdict), forced by a JSON-schema enum (any OpenAI-compatible endpoint) or by a GBNF grammar
(llama.cpp's servers, fewer tokens), optionally with the log-probability of the chosen word.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
)

from attesta_platform.errors import PermanentError, TransientError
from attesta_platform.logs import get_logger

log = get_logger("attesta.llm")

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"


class LLMError(Exception):
    """Base class of everything this client raises."""


class LLMUnavailable(LLMError, TransientError):
    """The endpoint could not give an answer now (timeout, connection, 429, 5xx)."""


class LLMBadOutput(LLMError, PermanentError):
    """The endpoint answered with something that is not the JSON object asked for."""


@dataclass(frozen=True)
class Choice:
    value: str  # one of the choices asked for
    logprob: float | None  # of the token that started the word, when asked for and given


CONSTRAINTS = ("json_schema", "gbnf")


@dataclass(frozen=True)
class LLMConfig:
    base_url: str = DEFAULT_BASE_URL
    model: str = "openai/gpt-4o-mini"
    api_key: str = ""
    timeout_s: float = 20.0
    attempts: int = 3
    initial_backoff_s: float = 0.25
    max_backoff_s: float = 4.0
    max_retry_after_s: float = 10.0  # never sleep longer than this on a server's Retry-After


class _RetryAfter(LLMUnavailable):
    def __init__(self, message: str, retry_after_s: float | None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP-date: fall back to our own backoff


class ChatCompletionsClient:
    def __init__(self, config: LLMConfig, http: httpx.AsyncClient | None = None) -> None:
        self.config = config
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(
            timeout=httpx.Timeout(config.timeout_s, connect=min(5.0, config.timeout_s)),
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=16),
            follow_redirects=False,
        )

    @property
    def model(self) -> str:
        return self.config.model

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    def _wait(self, state: RetryCallState) -> float:
        cfg = self.config
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _RetryAfter) and exc.retry_after_s is not None:
            return min(exc.retry_after_s, cfg.max_retry_after_s)
        base = min(cfg.max_backoff_s, cfg.initial_backoff_s * 2.0 ** (state.attempt_number - 1))
        return base * (0.5 + random.random() / 2)

    async def complete_json(
        self,
        messages: list[dict[str, str]],
        *,
        schema_name: str,
        json_schema: dict[str, Any],
        temperature: float = 0.0,
        max_tokens: int = 800,
    ) -> dict[str, Any]:
        """Ask for one JSON object matching ``json_schema``; return it parsed."""
        body = {
            "model": self.config.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "strict": True, "schema": json_schema},
            },
        }
        retrying = AsyncRetrying(
            stop=stop_after_attempt(max(1, self.config.attempts)),
            wait=self._wait,
            retry=retry_if_exception_type(LLMError),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._once(body, attempt.retry_state.attempt_number)
        raise AssertionError("unreachable")  # pragma: no cover - reraise=True always raises

    async def complete_choice(
        self,
        messages: list[dict[str, str]],
        choices: tuple[str, ...],
        *,
        constraint: str = "json_schema",
        logprobs: bool = False,
    ) -> Choice:
        """Ask for exactly one of ``choices`` (words of letters, digits and ``_``), forced by
        ``constraint``: "json_schema" (an object ``{"choice": <enum>}``) or "gbnf" (the bare word,
        llama.cpp's ``grammar`` field). A reply that is not one of them is ``LLMBadOutput``."""
        if constraint not in CONSTRAINTS or not choices or not all(re.fullmatch(r"\w+", c) for c in choices):
            raise ValueError(f"constraint must be one of {CONSTRAINTS} and choices plain words")
        body: dict[str, Any] = {"model": self.config.model, "messages": messages, "temperature": 0.0,
                                "max_tokens": 16 if constraint == "json_schema" else 8}
        if constraint == "gbnf":
            body["grammar"] = "root ::= " + " | ".join(f'"{c}"' for c in choices)
        else:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "choice", "strict": True, "schema": {
                    "type": "object", "additionalProperties": False, "required": ["choice"],
                    "properties": {"choice": {"type": "string", "enum": list(choices)}}}}}
        if logprobs:
            body["logprobs"], body["top_logprobs"] = True, 3
        retrying = AsyncRetrying(stop=stop_after_attempt(max(1, self.config.attempts)), wait=self._wait,
                                 retry=retry_if_exception_type(LLMError), reraise=True)
        async for attempt in retrying:
            with attempt:
                resp = await self._post(body, attempt.retry_state.attempt_number)
                return _choice(resp, choices, constraint)
        raise AssertionError("unreachable")  # pragma: no cover - reraise=True always raises

    async def _once(self, body: dict[str, Any], attempt: int) -> dict[str, Any]:
        return _content_object(await self._post(body, attempt))

    async def _post(self, body: dict[str, Any], attempt: int) -> httpx.Response:
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        headers = {"content-type": "application/json", "X-Title": "Attesta"}
        if self.config.api_key:
            headers["authorization"] = f"Bearer {self.config.api_key}"
        try:
            resp = await self._http.post(url, json=body, headers=headers)
        except httpx.TimeoutException as exc:
            log.info("llm timeout", attempt=attempt, error=type(exc).__name__)
            raise LLMUnavailable(f"LLM endpoint timed out after {self.config.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            log.info("llm connection failure", attempt=attempt, error=repr(exc))
            raise LLMUnavailable(f"LLM endpoint unreachable: {type(exc).__name__}") from None
        if resp.status_code == 429 or resp.status_code >= 500:
            log.info("llm unavailable", attempt=attempt, status=resp.status_code)
            raise _RetryAfter(f"LLM endpoint answered HTTP {resp.status_code}",
                              _retry_after(resp.headers.get("retry-after")))
        if resp.status_code != 200:
            raise LLMBadOutput(f"LLM endpoint answered HTTP {resp.status_code}: {resp.text[:200]}")
        return resp


def _message(resp: httpx.Response) -> tuple[str, dict[str, Any]]:
    """The completion's text content and its first choice."""
    try:
        data = resp.json()
        choice = data["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMBadOutput("LLM response is not a chat completion (no choices[0].message)") from None
    if not isinstance(message, dict) or not isinstance(choice, dict):
        raise LLMBadOutput("LLM response message is not an object")
    if message.get("refusal"):
        raise LLMBadOutput(f"LLM refused: {str(message['refusal'])[:200]}")
    content = message.get("content")
    if not isinstance(content, str) or not content.strip():
        raise LLMBadOutput("LLM response has no text content")
    return content.strip(), choice


def _choice(resp: httpx.Response, choices: tuple[str, ...], constraint: str) -> Choice:
    text, choice = _message(resp)
    value: Any = text
    if constraint == "json_schema":
        obj = _parse_object(text)
        if set(obj) != {"choice"}:
            raise LLMBadOutput(f"LLM choice object has fields {sorted(obj)[:5]}, not just 'choice'")
        value = obj["choice"]
    if not isinstance(value, str) or value not in choices:
        raise LLMBadOutput(f"LLM chose {str(value)[:40]!r}, not one of {list(choices)}")
    return Choice(value, _first_logprob(choice, text, value))


def _first_logprob(choice: dict[str, Any], text: str, value: str) -> float | None:
    """The log-probability of the token that starts ``value`` in the reply (the word itself,
    not the ``{"`` a JSON reply opens with), when the endpoint returned logprobs."""
    try:
        tokens = choice["logprobs"]["content"]
        start, pos = text.index(value), 0
        for tok in tokens:
            pos += len(tok["token"])
            if pos > start:
                return float(tok["logprob"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return None


def _content_object(resp: httpx.Response) -> dict[str, Any]:
    text, _ = _message(resp)
    return _parse_object(text)


def _parse_object(text: str) -> dict[str, Any]:
    if text.startswith("```"):  # some models wrap JSON in a code fence despite the schema
        text = text.strip("`")
        text = text[4:] if text.lower().startswith("json") else text
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LLMBadOutput(f"LLM content is not valid JSON: {exc.msg} at char {exc.pos}") from None
    if not isinstance(obj, dict):
        raise LLMBadOutput(f"LLM content is JSON but not an object ({type(obj).__name__})")
    return obj
