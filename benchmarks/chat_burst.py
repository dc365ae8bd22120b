"""Chat under a burst of one API key (issue #23): status counts and latency of the burst, and
of another workspace's chats asked meanwhile, side by side for two versions of the code.

For each version a fresh chat stack is started on the shared Kafka/PostgreSQL/Redis
(`attesta run retrieval`, `attesta run answer`, `attesta run gateway`, consumer groups of their
own started at the end of their topics, a temporary gateway database with two keys, retrieval's
index from the chat e2e tests' folder), warmed up, and then, per burst size N and mode:

1. N chats with key A sent at once: ``once``, one attempt each (what the issue's probe did),
   or ``retry``, each caller asking again after Retry-After until answered (at most 30 s; its
   time is the time to its answer);
2. meanwhile, key B (another workspace) asks one question after another, at most one every
   1.5 s, until the burst is over (at least 10), as a person would;
3. from the burst's last reply, the time until retrieval's lag is back to 0 ("drain"): how
   long it kept working for callers who had been told to leave, or had given up.

``--path full`` first trains a tiny cross-encoder (2 steps: poor rankings, but the same model
size, so the same cost per question as the real one) so retrieval takes the full path, about
as slow per chat as the issue's probe saw (0.8 s); ``rrf_only`` (the default) needs no model.

Both versions run one after the other (never at once: they would share the two cores), each
with the gateway's defaults. ``--before REF`` extracts git revision REF's `libs/` and
`services/` to a temporary folder and runs its processes from there (first on PYTHONPATH);
"after" is the working tree, or ``--after REF`` the same way (on a tree several people edit at
once, a committed revision measures only what it says). The load average is printed next to
each burst.

    flock /tmp/attesta-heavy.lock .venv/bin/python benchmarks/chat_burst.py --before bbe2aca \
        [--after REF] [--path full] [--bursts 30,100] [--modes once,retry] [--rounds 1]

Results are also appended to ``benchmarks/results/chat_burst.jsonl``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import io
import json
import os
import secrets
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
RETRIEVAL_STATE = ROOT / ".state" / "e2e-retrieval"  # the chat e2e tests' index (locked)
OTHER_EVERY_S = 1.5  # the other workspace asks at most this often: 40 a minute
QUESTIONS = ("What is the usual adult dose of Velnorex?", "Which company makes Velnorex?",
             "What are the side effects of Velnorax?", "How should Velnorex be stored?")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else 0.0


def loadavg() -> str:
    """The 1/5/15-minute load averages (``cat /proc/loadavg``)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


@dataclass
class Burst:
    version: str
    size: int
    mode: str
    path: str
    load_before: str = ""
    load_after: str = ""
    burst: list[tuple[int, float]] = field(default_factory=list)  # status, seconds
    other: list[tuple[int, float]] = field(default_factory=list)
    refused_without_retry_after: int = 0
    attempts: int = 0
    retrieval_ms: list[float] = field(default_factory=list)  # retrieval's own time per answer
    drain_s: float = 0.0

    def row(self) -> dict[str, Any]:
        ok = [s for c, s in self.burst if c == 200]
        refused = [s for c, s in self.burst if c in (429, 503)]
        other_ok = [s for c, s in self.other if c == 200]
        return {
            "version": self.version, "burst": self.size, "mode": self.mode, "path": self.path,
            "attempts": self.attempts,
            "statuses": dict(sorted(Counter(c for c, _ in self.burst).items())),
            "all_p50_s": pct([s for _, s in self.burst], 50),
            "all_p95_s": pct([s for _, s in self.burst], 95),
            "answered_p50_s": pct(ok, 50), "answered_p95_s": pct(ok, 95),
            "refused_p95_s": pct(refused, 95) if refused else None,
            "refused_without_retry_after": self.refused_without_retry_after,
            "other_n": len(self.other),
            "other_statuses": dict(sorted(Counter(c for c, _ in self.other).items())),
            "other_p50_s": pct(other_ok, 50), "other_p95_s": pct(other_ok, 95),
            "other_max_s": max(other_ok, default=0.0), "drain_s": round(self.drain_s, 1),
            "retrieval_p50_ms": round(pct(self.retrieval_ms, 50), 1),
            "load_before": self.load_before, "load_after": self.load_after,
        }


class Stack:
    """retrieval + answer + gateway of one version, with two keys of two workspaces."""

    def __init__(self, version: str, pythonpath: str | None, logs: Path,
                 reranker: Path | None) -> None:
        self.version, self.pythonpath, self.logs = version, pythonpath, logs
        self.reranker = reranker
        self.tag = uuid.uuid4().hex[:8]
        self.groups = {"retrieval": f"bench-burst-retrieval-{self.tag}",
                       "answer": f"bench-burst-answer-{self.tag}"}
        self.procs: list[subprocess.Popen[bytes]] = []
        self.url = ""
        self.keys: dict[str, str] = {}

    def spawn(self, service: str, **env: str) -> subprocess.Popen[bytes]:
        full = {**os.environ, "ATTESTA_LOG_JSON": "false", "HF_HUB_OFFLINE": "1", **env}
        if self.pythonpath:
            full["PYTHONPATH"] = self.pythonpath
        log = open(self.logs / f"{self.version}-{service}.log", "ab")  # noqa: SIM115
        proc = subprocess.Popen([sys.executable, "-m", "attesta_platform.cli", "run", service],
                                env=full, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        self.procs.append(proc)
        return proc

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Stack]:
        from attesta_contracts.topics import CHAT_REQUESTED, RETRIEVAL_COMPLETED
        sys.path.insert(0, str(ROOT))  # tests/gateway_fakes.py: the gateway's test helpers
        from tests.gateway_fakes import make_key, migrated_database
        from attesta_testing.infra import commit_group_at_end, free_port, kafka_bootstrap, redis_url

        bootstrap = kafka_bootstrap()
        await commit_group_at_end(bootstrap, CHAT_REQUESTED, self.groups["retrieval"])
        await commit_group_at_end(bootstrap, RETRIEVAL_COMPLETED, self.groups["answer"])
        secret = secrets.token_urlsafe(48)
        try:
            async with migrated_database() as db_url:
                self.keys = {ws: (await make_key(db_url, secret, ws))[1]
                             for ws in ("bench-burst", "bench-other")}
                ports = {"retrieval": free_port(), "answer": free_port(), "gateway": free_port()}
                # No reranker: a folder without a model (rrf_only), not the user's cached one.
                self.spawn("retrieval", ATTESTA_HEALTH_PORT=str(ports["retrieval"]),
                           ATTESTA_RETRIEVAL_CHAT_GROUP=self.groups["retrieval"],
                           ATTESTA_RETRIEVAL_STATE_DIR=str(RETRIEVAL_STATE),
                           ATTESTA_RERANKER_DIR=str(self.reranker or self.logs / "no-reranker"),
                           ATTESTA_RETRIEVAL_RERANKER_POLL_S="0")
                # A version without ATTESTA_ANSWER_CONSUMER_GROUP joins the group "answer".
                self.spawn("answer", ATTESTA_HEALTH_PORT=str(ports["answer"]),
                           ATTESTA_ANSWER_CONSUMER_GROUP=self.groups["answer"])
                self.spawn("gateway", ATTESTA_HTTP_PORT=str(ports["gateway"]),
                           ATTESTA_GATEWAY_DB_URL=db_url, ATTESTA_GATEWAY_SECRET=secret,
                           REDIS_URL=redis_url(), ATTESTA_RATE_LIMIT_PREFIX=f"bench-{self.tag}:")
                self.url = f"http://127.0.0.1:{ports['gateway']}"
                for name in ("gateway", "answer", "retrieval"):
                    await _ready(f"http://127.0.0.1:{ports[name]}/readyz", 600)
                yield self
        finally:
            for proc in self.procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in self.procs:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()

    async def retrieval_lag(self) -> int:
        """Chat requests retrieval has not read yet (the pipeline's one-at-a-time stage; a
        version without ATTESTA_ANSWER_CONSUMER_GROUP answers in the group "answer")."""
        from aiokafka import AIOKafkaConsumer
        from aiokafka.admin import AIOKafkaAdminClient

        from attesta_testing.infra import kafka_bootstrap

        bootstrap = kafka_bootstrap()
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await admin.start()
        await consumer.start()
        try:
            offsets = await admin.list_consumer_group_offsets(self.groups["retrieval"])
            ends = await consumer.end_offsets(list(offsets))
            return sum(max(0, ends[tp] - om.offset) for tp, om in offsets.items())
        finally:
            await consumer.stop()
            await admin.close()


async def _ready(url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient() as http:
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(url, timeout=2)).status_code == 200:
                    return
            await asyncio.sleep(0.5)
    raise SystemExit(f"{url} not ready in {timeout_s} s")


async def _chat(http: httpx.AsyncClient, key: str, question: str) -> httpx.Response:
    return await http.post("/v1/chat", json={"question": question},
                           headers={"authorization": f"Bearer {key}"})


async def _burst(stack: Stack, http: httpx.AsyncClient, size: int, mode: str, path: str) -> Burst:
    result = Burst(stack.version, size, mode, path, load_before=loadavg())
    done = asyncio.Event()

    async def one(i: int) -> None:
        started = time.monotonic()
        while True:
            result.attempts += 1
            try:
                resp = await _chat(http, stack.keys["bench-burst"], f"{QUESTIONS[i % 4]} (b{i})")
                code, retry_after = resp.status_code, resp.headers.get("retry-after")
                if code == 200:
                    result.retrieval_ms.append(resp.json()["timings_ms"].get("retrieval.total", 0))
            except httpx.HTTPError:
                code, retry_after = 0, None
            if code in (429, 503) and not retry_after:
                result.refused_without_retry_after += 1
            if mode == "once" or code not in (429, 503) or time.monotonic() - started > 30:
                break
            await asyncio.sleep(float(retry_after or 1))
        result.burst.append((code, time.monotonic() - started))

    async def burst() -> None:
        await asyncio.gather(*(one(i) for i in range(size)))
        done.set()
        # From the burst's last reply: how long retrieval keeps working on chats nobody waits for
        started = time.monotonic()
        while await stack.retrieval_lag() > 0 and time.monotonic() - started < 300:
            await asyncio.sleep(0.5)
        result.drain_s = time.monotonic() - started

    async def other() -> None:
        await asyncio.sleep(0.1)  # the burst is in
        i = 0
        while not done.is_set() or len(result.other) < 10:
            started = time.monotonic()
            resp = await _chat(http, stack.keys["bench-other"], f"{QUESTIONS[i % 4]} (o{i})")
            result.other.append((resp.status_code, time.monotonic() - started))
            if resp.status_code == 200:
                result.retrieval_ms.append(resp.json()["timings_ms"].get("retrieval.total", 0))
            i += 1
            # a person's pace: at most one question every OTHER_EVERY_S (under the key's chat rate)
            await asyncio.sleep(max(0.0, OTHER_EVERY_S - (time.monotonic() - started)))

    await asyncio.gather(burst(), other())
    result.load_after = loadavg()
    return result


async def _measure(version: str, pythonpath: str | None, bursts: list[int], modes: list[str],
                   logs: Path, reranker: Path | None) -> list[Burst]:
    out = []
    path = "full" if reranker else "rrf_only"
    async with Stack(version, pythonpath, logs, reranker).running() as stack:
        limits = httpx.Limits(max_connections=500, max_keepalive_connections=500)
        async with httpx.AsyncClient(base_url=stack.url, timeout=60, limits=limits) as http:
            for i in range(8):  # warm-up: models, sentence evidence, connections
                reply = await _chat(http, stack.keys["bench-other"], QUESTIONS[i % 4])
            if reply.status_code != 200 or reply.json().get("hybrid_path") != path:
                raise SystemExit(f"{version}: warm-up chat {reply.status_code} {reply.text[:300]}")
            for mode in modes:
                for size in bursts:
                    out.append(await _burst(stack, http, size, mode, path))
                    print(json.dumps(out[-1].row()), flush=True)
                    await asyncio.sleep(5)
    return out


def _tiny_reranker(into: Path) -> Path:
    """A cross-encoder of the real one's size, trained 2 steps (seconds): its rankings are
    poor, its cost per question is the real one's."""
    from attesta_retrieval.service_layer.reranker_training import TrainingConfig, train

    out = into / "tiny-reranker"
    train(TrainingConfig(max_steps=2, max_queries=6, questions_per_step=2, group_size=4,
                         generated_per_card=1, reverse_lookups=4, comparisons=4),
          out, progress=False)
    return out


def _extract(ref: str, into: Path) -> str:
    archive = subprocess.run(["git", "archive", ref, "libs", "services"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return os.pathsep.join(str(p) for p in sorted(into.glob("libs/*/src")) +
                           sorted(into.glob("services/*/src")))


def _table(rows: list[dict[str, Any]]) -> str:
    lines = ["| code | path | burst | mode | statuses (attempts) | all p50/p95 s | answered p50/p95 s "
             "| refused p95 s | other workspace: n, statuses | other p50/p95/max s "
             "| retrieval p50 ms | drain s | load before → after |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        statuses = " ".join(f"{k}×{v}" for k, v in r["statuses"].items())
        other = " ".join(f"{k}×{v}" for k, v in r["other_statuses"].items())
        refused = "—" if r["refused_p95_s"] is None else f"{r['refused_p95_s']:.3f}"
        lines.append(
            f"| {r['version']} | {r['path']} | {r['burst']} | {r['mode']} | {statuses} "
            f"({r['attempts']}) | {r['all_p50_s']:.2f} / "
            f"{r['all_p95_s']:.2f} | {r['answered_p50_s']:.2f} / {r['answered_p95_s']:.2f} | "
            f"{refused} | {r['other_n']}, {other} | {r['other_p50_s']:.2f} / "
            f"{r['other_p95_s']:.2f} / {r['other_max_s']:.2f} | {r['retrieval_p50_ms']:.0f} | "
            f"{r['drain_s']} | "
            f"{r['load_before']} → {r['load_after']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bursts", default="30,100", help="burst sizes, comma-separated")
    ap.add_argument("--before", metavar="REF", help="also run git revision REF's code, first")
    ap.add_argument("--after", metavar="REF", help="run revision REF instead of the working tree")
    ap.add_argument("--rounds", type=int, default=1, help="before/after pairs, alternated")
    ap.add_argument("--modes", default="once,retry", help="once and/or retry, comma-separated")
    ap.add_argument("--path", choices=("rrf_only", "full"), default="rrf_only",
                    help="full: train a tiny cross-encoder first (same cost as the real one)")
    args = ap.parse_args()
    bursts = [int(b) for b in args.bursts.split(",")]
    modes = args.modes.split(",")
    seeded = subprocess.run([sys.executable, "-m", "attesta_platform.cli", "retrieval",
                             "seed-kb", "--quiet"], cwd=ROOT, capture_output=True, text=True)
    if seeded.returncode != 0:
        raise SystemExit(seeded.stdout + seeded.stderr)
    RETRIEVAL_STATE.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="chat-burst-") as tmp, \
            open(RETRIEVAL_STATE.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one embedded Chroma writer at a time
        logs = Path(tmp)
        before_path = _extract(args.before, Path(tmp) / "before") if args.before else None
        reranker = _tiny_reranker(Path(tmp)) if args.path == "full" else None
        after_path = _extract(args.after, Path(tmp) / "after") if args.after else None
        versions = ([(f"before {args.before}", before_path)] if args.before else []) + [
            (f"after {args.after or 'working tree'}", after_path)]
        print(f"chat bursts {bursts} {modes}, path {args.path}, {args.rounds} round(s); "
              f"load {loadavg()}", flush=True)
        for _ in range(args.rounds):
            for version, path in versions:
                rows += [b.row() for b in asyncio.run(
                    _measure(version, path, bursts, modes, logs, reranker))]
    print(_table(rows))
    results = ROOT / "benchmarks" / "results" / "chat_burst.jsonl"
    with results.open("a") as out:
        for row in rows:
            out.write(json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **row}) + "\n")


if __name__ == "__main__":
    main()
