"""A local OpenAI-compatible chat-completions server for tests, the demo and the benchmark.

It answers on 127.0.0.1 only, with varied, realistic text about the brands it is told about:
some answers link the brand's site, some cite third-party pages, some carry ``url_citation``
annotations or a top-level ``citations`` list, some name a brand without a link, some name no
brand at all. The variant is a pure function of (prompt, how many times this prompt was asked),
so runs are reproducible and repeated samples differ.

Hostile modes are chosen by the request's ``model`` (so one server serves every engine):

| model | answer |
|---|---|
| ``fake-timeout`` | sleeps 30 s before answering |
| ``fake-429`` / ``fake-500`` | always that status (429 with ``Retry-After: 0``) |
| ``fake-flaky`` | 500 on the first two asks of a prompt, then a normal answer |
| ``fake-malformed`` | a 200 whose body is truncated JSON |
| ``fake-empty`` | a 200 with an empty ``content`` |
| ``fake-huge`` | a 200 with a 5 MB answer |
| ``fake-unauthorized`` | 401 unless ``Authorization: Bearer <FAKE_ENGINE_KEY>`` |
| ``fake-dated`` | a normal answer reporting the build ``fake-dated-2026-11-01`` |
| ``fake-nobuild`` | a normal answer with no ``model`` or ``system_fingerprint`` field |
| ``fake-hostile-build`` | a normal answer whose ``model`` is 5,000 characters with a NUL and |
|  | whose ``system_fingerprint`` is a JSON object |
| anything else | a normal answer after ``--latency-ms`` (default 0) |

Normal answers report ``model`` (the requested one) and ``system_fingerprint`` (the state's
``fingerprint``, ``fp_fake0001`` unless a test changes it), like OpenAI's endpoint.

Run it: ``python -m attesta_collector.fake_engine --port 0 --brands brands.json`` (prints
``listening on http://127.0.0.1:<port>/v1``).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

DEFAULT_BRANDS = [
    {"name": "Lumora", "domain": "lumora.example", "product": "sleep-tracking ring",
     "fact": "founded in 2019 in Porto"},
    {"name": "Vexa Labs", "domain": "vexa-labs.example", "product": "smart thermostat",
     "fact": "known for its open API"},
]
THIRD_PARTY = ["https://en.wikipedia.org/wiki/Sleep_tracking", "https://www.nih.gov/sleep",
               "https://www.theverge.com/reviews/wearables", "https://health.bbc.co.uk/sleep"]


@dataclass
class FakeEngineState:
    brands: list[dict[str, str]] = field(default_factory=lambda: list(DEFAULT_BRANDS))
    latency_s: float = 0.0
    key: str | None = None
    asked: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    fingerprint: str = "fp_fake0001"


def _pick(seed: bytes, n: int, salt: str) -> int:
    return int.from_bytes(hashlib.sha256(seed + salt.encode()).digest()[:4], "big") % n


def compose(prompt: str, nth: int, brands: list[dict[str, str]]
            ) -> tuple[str, list[dict[str, Any]], list[str]]:
    """(text, url_citation annotations, citations) for the nth ask of ``prompt``."""
    seed = f"{prompt}\x1f{nth}".encode()
    b = brands[_pick(seed, len(brands), "brand")] if brands else None
    other = brands[(brands.index(b) + 1) % len(brands)] if b and len(brands) > 1 else None
    third = THIRD_PARTY[_pick(seed, len(THIRD_PARTY), "third")]
    variant = _pick(seed, 6, "variant")
    annotations: list[dict[str, Any]] = []
    citations: list[str] = []
    if b is None or variant == 5:
        text = ("There are several options worth comparing. Look at battery life, comfort and "
                f"how the data is shown; independent reviews such as {third} help.")
        return text, annotations, citations
    name, dom, product = b["name"], b["domain"], b.get("product", "product")
    if variant == 0:
        text = (f"{name} makes a {product}. You can read the specifications on its site: "
                f"https://{dom}/products. Reviewers also mention {third}.")
    elif variant == 1:
        text = (f"A popular choice is {name}, a {product} that is {b.get('fact', 'well rated')}. "
                "It is often recommended for beginners.")
    elif variant == 2:
        url = f"https://www.{dom}/about"
        text = f"{name} is a {product} brand [1]. Compare it with alternatives [2]."
        annotations = [
            {"type": "url_citation", "url_citation": {"url": url, "title": f"About {name}",
                                                      "start_index": 0, "end_index": len(name)}},
            {"type": "url_citation", "url_citation": {"url": third, "title": "Review"}}]
    elif variant == 3:
        text = (f"Both {name} and {other['name'] if other else 'others'} are options. "
                f"See [their comparison]({third}) and {other['domain'] if other else 'the docs'}.")
        citations = [third, f"https://{other['domain']}/" if other else third]
    else:
        text = f"I don't have reliable information about {name}; check their website."
    return text, annotations, citations


def completion_body(model: str, text: str, annotations: list[dict[str, Any]],
                    citations: list[str]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if annotations:
        message["annotations"] = annotations
    body: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion", "model": model,
                  "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                  "usage": {"prompt_tokens": 12, "completion_tokens": len(text.split()),
                            "total_tokens": 12 + len(text.split())}}
    if citations:
        body["citations"] = citations
    return body


def make_app(state: FakeEngineState) -> web.Application:
    async def chat(request: web.Request) -> web.StreamResponse:
        state.requests += 1
        try:
            body = await request.json()
            prompt = body["messages"][-1]["content"]
            model = str(body.get("model", "fake"))
        except (ValueError, KeyError, IndexError, TypeError):
            return web.json_response({"error": {"message": "bad request"}}, status=400)
        key = hashlib.sha256(f"{model}\x1f{prompt}".encode()).hexdigest()
        state.asked[key] += 1
        nth = state.asked[key]
        if model == "fake-timeout":
            await asyncio.sleep(30)
        if model == "fake-429":
            return web.json_response({"error": {"message": "slow down"}}, status=429,
                                     headers={"Retry-After": "0"})
        if model == "fake-500" or (model == "fake-flaky" and nth <= 2):
            return web.json_response({"error": {"message": "upstream overloaded"}}, status=500)
        if model == "fake-malformed":
            return web.Response(body=b'{"choices": [{"message": {"content": "cut', status=200,
                                content_type="application/json")
        if model == "fake-empty":
            return web.json_response(completion_body(model, "", [], []))
        if model == "fake-huge":
            return web.json_response(completion_body(model, "Lumora " * 750_000, [], []))
        if model == "fake-unauthorized" and request.headers.get("Authorization") != f"Bearer {state.key}":
            return web.json_response({"error": {"message": "invalid api key"}}, status=401)
        if state.latency_s:
            await asyncio.sleep(state.latency_s)
        text, annotations, citations = compose(prompt, nth, state.brands)
        reply = completion_body(model, text, annotations, citations)
        reply["system_fingerprint"] = state.fingerprint
        if model == "fake-dated":
            reply["model"] = f"{model}-2026-11-01"
        elif model == "fake-nobuild":
            del reply["model"], reply["system_fingerprint"]
        elif model == "fake-hostile-build":
            reply["model"] = "m\x00" + "x" * 5000
            reply["system_fingerprint"] = {"build": ["not", "a", "string"]}
        return web.json_response(reply)

    app = web.Application(client_max_size=1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    return app


class FakeEngine:
    """The server in a thread with its own event loop (tests use it beside their own loop)."""

    def __init__(self, brands: list[dict[str, str]] | None = None, latency_ms: float = 0.0,
                 key: str | None = None, port: int = 0) -> None:
        self.port = port  # 0: any free port (a fixed one can be put on an allow-list first)
        self.state = FakeEngineState(brands=list(brands or DEFAULT_BRANDS),
                                     latency_s=latency_ms / 1000, key=key)
        self.base_url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> FakeEngine:
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._runner = web.AppRunner(make_app(self.state), access_log=None)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", self.port)
            loop.run_until_complete(site.start())
            port = self._runner.addresses[0][1]
            self.base_url = f"http://127.0.0.1:{port}/v1"
            self._ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-engine", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake engine did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m attesta_collector.fake_engine")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--brands", help="JSON file: [{name, domain, product, fact}]")
    args = parser.parse_args(argv)
    brands = json.loads(open(args.brands, encoding="utf-8").read()) if args.brands else None
    state = FakeEngineState(brands=brands or list(DEFAULT_BRANDS), latency_s=args.latency_ms / 1000)

    async def serve() -> None:
        runner = web.AppRunner(make_app(state), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port)
        await site.start()
        port = runner.addresses[0][1]
        print(f"listening on http://127.0.0.1:{port}/v1", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
