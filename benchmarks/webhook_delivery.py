"""Webhook deliveries per second to a local receiver (issue #25's benchmark).

The receiver (attesta_testing.alert_receivers: aiohttp, checks every signature as a real receiver
would) runs in a child process, so the client's numbers are not the receiver's loop time too.
Each delivery is one ``adapters.notifiers.deliver``: the outbound policy's check, the signed
JSON body, one POST, the status classified. Modes:

- sequential, a new HTTP client per delivery (what one outbox attempt costs on its own);
- sequential, one shared client (connections reused);
- ``--concurrency`` (8) deliveries in flight, one shared client;
- the same, a new client per delivery.

    flock /tmp/attesta-heavy.lock .venv/bin/python benchmarks/webhook_delivery.py [--n 500]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import time
from datetime import UTC, datetime
from multiprocessing.connection import Connection

SECRET = "whsec-bench"


def _serve(conn: Connection) -> None:
    """The child: a receiver on 127.0.0.1; sends its port, then on request its counts."""
    # Imported here, in the child only: the parent never runs a receiver.
    from attesta_testing.alert_receivers import WebhookReceiver

    async def run() -> None:
        async with WebhookReceiver(SECRET) as receiver:
            conn.send(receiver.port)
            loop = asyncio.get_running_loop()
            while True:
                request = await loop.run_in_executor(None, conn.recv)
                if request == "stop":
                    break
                ok = sum(1 for r in receiver.requests if r.signature == "ok")
                conn.send((len(receiver.requests), ok, len(receiver.delivered())))
                receiver.clear()

    asyncio.run(run())


async def bench(port: int, n: int, concurrency: int, shared: bool) -> tuple[float, list[float]]:
    # Imported here: the child process must not import the classifier's modules first.
    from attesta_classifier.adapters.notifiers import NotifierSettings, deliver, http_client
    from attesta_classifier.domain.notifications import AlertMessage, Channel, Period
    from attesta_platform.outbound import OutboundPolicy

    settings = NotifierSettings(policy=OutboundPolicy.from_setting(f"127.0.0.1:{port}"),
                                http_timeout_s=10.0)
    channel = Channel("webhook", f"http://127.0.0.1:{port}/hook/bench", SECRET)
    message = AlertMessage(
        alert_id="al-bench", workspace_id="ws-bench", rule_id="ru-bench", brand_id="b-lumora",
        brand_name="Lumora", metric="citation_rate", segment={"engine": "chatgpt"},
        direction="down", before=Period("2026-W47", 0.30, 30, 100, 0.22, 0.40),
        after=Period("2026-W48", 0.125, 15, 120, 0.08, 0.20), p_value=0.0004, adjusted_p=0.012,
        run_links=[f"https://app.attesta.example/runs/r{i}" for i in range(5)], is_test=False,
        raised_at=datetime.now(UTC))
    latencies: list[float] = []
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int, client: object) -> None:
        async with gate:
            t0 = time.perf_counter()
            await deliver(channel, message, delivery_id=f"dl-{i}", settings=settings,
                          client=client)  # type: ignore[arg-type]
            latencies.append(time.perf_counter() - t0)

    started = time.perf_counter()
    if shared:
        async with http_client(settings) as client:
            await asyncio.gather(*(one(i, client) for i in range(n)))
    else:
        await asyncio.gather(*(one(i, None) for i in range(n)))
    return time.perf_counter() - started, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="deliveries per mode")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    server = ctx.Process(target=_serve, args=(child,), daemon=True)
    server.start()
    port = parent.recv()
    modes = [("sequential, new client each", 1, False), ("sequential, shared client", 1, True),
             (f"concurrency {args.concurrency}, shared client", args.concurrency, True),
             (f"concurrency {args.concurrency}, new client each", args.concurrency, False)]
    print(f"{args.n} signed webhook deliveries per mode to 127.0.0.1:{port} "
          "(receiver in a child process, verifying every signature)")
    print(f"{'mode':38} {'deliveries/s':>12} {'p50 ms':>8} {'p95 ms':>8} {'verified':>9}")
    try:
        asyncio.run(bench(port, min(20, args.n), 1, True))  # warm-up: imports, first connects
        parent.send("count")
        parent.recv()
        for name, concurrency, shared in modes:
            wall, lat = asyncio.run(bench(port, args.n, concurrency, shared))
            parent.send("count")
            received, verified, unique = parent.recv()
            lat_ms = sorted(x * 1000 for x in lat)
            p95 = lat_ms[min(len(lat_ms) - 1, int(0.95 * len(lat_ms)))]
            print(f"{name:38} {args.n / wall:12.0f} {statistics.median(lat_ms):8.2f} "
                  f"{p95:8.2f} {verified:>4}/{received:<4}")
            if verified != args.n or unique != args.n:
                raise SystemExit(f"the receiver verified {verified} and de-duplicated to "
                                 f"{unique} of {args.n} deliveries")
    finally:
        parent.send("stop")
        server.join(5)


if __name__ == "__main__":
    main()
