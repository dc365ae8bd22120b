"""The whole pipeline on one Kafka node and on the three-node cluster, side by side in one run
(issue #26 item 5 and its benchmark).

    flock /tmp/attesta-heavy.lock .venv/bin/python benchmarks/cluster_pipeline.py \\
        --duration 300 --seed 26 --json cluster-pipeline.json

For each mode in turn (the single node first, then the cluster; same load, same seed) it starts
a PRIVATE system with scripts/faults.py's own functions (``Infra``, ``Services``,
``start_system``: deploy/infra.sh on a state folder and ports of its own, every consumer service
as ``--instances`` processes in one group, each service as its own Kafka principal on the
cluster), drives the fault harness's ``Load`` through the gateway without faults (POST /v1/runs,
chat, ground-truth refreshes, collections from the fake engine planned on demand plus the
minutely schedule), then stops it and measures:

- pipeline runs per second: runs accepted by the gateway (202 to POST /v1/runs), every run on
  ``runs.recorded.v1`` (API, chat and collected samples) and the ones that reached
  ``evidence.recorded.v1`` (an event whose reference is that run);
- end-to-end p50/p99 from ``runs.recorded`` to ``evidence.recorded``: the two events' envelope
  ``occurred_at`` (the run's is stamped when its outbox row is written, so the outbox relay,
  Kafka, the evidence intake and its relay are all inside; one machine, one clock);
- consumer lag over time: every group's lag sampled every ``--lag-interval`` s with the admin
  API (faults.py's ``consumer_lag``), its max and its value when the load stopped;
- broker CPU seconds per 1,000 runs: utime + stime from /proc/<pid>/stat of the broker
  processes this script started (one, or three), over the measured window, per 1,000 runs on
  ``runs.recorded.v1`` in that window; the service processes' CPU the same way; both also as
  % of one core, under the load and for ``--idle`` s before it (the cost with nothing to do);
- the chat round trip p50/p99 through the gateway (question to answer, as the client saw it).

Then the ratios cluster / single. The single node speaks PLAINTEXT and the cluster SASL_SSL +
SCRAM-SHA-512, so what the cluster adds there is TLS + SCRAM *and* three replicas together. The
third mode, ``cluster-plaintext``, puts them apart: the same three nodes (replication 3,
min.insync.replicas 2, inter-broker traffic still SASL_SSL) with an extra PLAINTEXT client
listener (deploy/kafka/cluster.sh, ``ATTESTA_KAFKA_CLUSTER_PLAINTEXT_PORT``: for measurement
only), the services connecting there as User:ANONYMOUS, which set-up gives the union of the
services' ACLs so the authorizer still checks every request; set-up, the CLI and this script's
own clients stay the admin on SASL_SSL. ``--modes cluster,cluster-plaintext`` gives the cost of
TLS + SCRAM on the client hops (the chat round trip crosses Kafka three times) on one cluster.

Only processes this script started are signalled; SIGTERM unwinds like Ctrl-C and stops them.
docs/benchmarks.md ("Cluster vs single node") has the figures and docs/scaling.md what they
mean.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import random
import shlex
import shutil
import signal
import statistics
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
MODES = ("single", "cluster", "cluster-plaintext")


def _harness() -> ModuleType:
    """scripts/faults.py as a module (scripts/ is no package), loaded once under the name its
    wiring test uses."""
    name = "attesta_faults_harness"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "faults.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


faults = _harness()


def log(msg: str) -> None:
    print(f"[cluster-bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ------------------------------------------------------------------------------- pure parts
def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation between closest ranks (numpy's
    default); None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def run_times(values: list[bytes | None]) -> dict[str, tuple[float, str]]:
    """``runs.recorded.v1`` message values -> run id: (the first envelope's occurred_at as a
    UNIX time, the run's source). Redeliveries of a run keep its first time; values that are
    not envelopes (poison) are skipped."""
    out: dict[str, tuple[float, str]] = {}
    for value in values:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            env = json.loads(value or b"")
            rid = str(env["payload"]["run_id"])
            t = datetime.fromisoformat(env["occurred_at"]).timestamp()
            if rid not in out or t < out[rid][0]:
                out[rid] = (t, str(env["payload"].get("source", "external")))
    return out


def evidence_times(values: list[bytes | None]) -> dict[str, float]:
    """``evidence.recorded.v1`` message values -> run id: the first occurred_at of an event whose
    reference is that run (kind ``run``; engine responses and ground-truth sources are other
    kinds). An answer already stored (same bytes) still gets an event for its new reference."""
    out: dict[str, float] = {}
    for value in values:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            env = json.loads(value or b"")
            ref = env["payload"]["reference"]
            if ref["kind"] != "run":
                continue
            t = datetime.fromisoformat(env["occurred_at"]).timestamp()
            rid = str(ref["ref_id"])
            out[rid] = min(t, out.get(rid, t))
    return out


def pipeline(runs: dict[str, tuple[float, str]], evidence: dict[str, float], start: float,
             end: float) -> dict:
    """Runs recorded in [start, end) (UNIX times) and how many reached the log, in the window
    and at all, with the end-to-end latency (run recorded -> evidence recorded) of each that
    did."""
    seconds = end - start
    window = {rid: t for rid, (t, _src) in runs.items() if start <= t < end}
    lat = [evidence[rid] - t for rid, t in window.items() if rid in evidence]
    in_window = sum(1 for rid in window if rid in evidence and evidence[rid] < end)
    sources: dict[str, int] = {}
    for rid in window:
        sources[runs[rid][1]] = sources.get(runs[rid][1], 0) + 1
    p50, p99 = percentile(lat, 50), percentile(lat, 99)
    return {"runs_recorded": len(window), "runs_recorded_per_s": _r(len(window) / seconds, 2),
            "runs_by_source": sources,
            "evidence_reached": len(lat), "evidence_reached_in_window": in_window,
            "evidence_per_s": _r(in_window / seconds, 2),
            "e2e_p50_ms": _r(p50 * 1000 if p50 is not None else None, 1),
            "e2e_p99_ms": _r(p99 * 1000 if p99 is not None else None, 1),
            "e2e_max_ms": _r(max(lat) * 1000 if lat else None, 1)}


def lag_summary(samples: list[tuple[float, dict[str, int]]], load_end: float) -> dict:
    """Lag samples (time, group -> lag) -> per group: its max, its mean, its last value while
    the load ran and its last value at all, and the series (seconds since the first sample,
    lag); ``total`` is the same for the sum over groups. A group missing from a sample (not
    yet created, or the sample failed for it) counts as no sample, not as 0."""
    if not samples:
        return {}
    t0 = samples[0][0]
    groups = sorted({g for _t, lag in samples for g in lag})
    out: dict[str, dict] = {}
    series_by = {g: [(t, lag[g]) for t, lag in samples if g in lag] for g in groups}
    series_by["total"] = [(t, sum(lag.values())) for t, lag in samples if lag]
    for g, series in series_by.items():
        if not series:
            continue
        during = [v for t, v in series if t <= load_end]
        out[g] = {"max": max(v for _t, v in series),
                  "mean": _r(statistics.fmean(v for _t, v in series), 1),
                  "at_load_end": during[-1] if during else None,
                  "last": series[-1][1],
                  "series": [(_r(t - t0, 1), v) for t, v in series]}
    return out


def proc_cpu_seconds(stat: str, ticks: int) -> float:
    """utime + stime (fields 14 and 15) of a /proc/<pid>/stat line, in seconds. The command
    name in parentheses may hold spaces or parentheses itself: fields count after the last
    ')'."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks


def cpu_per_1000(cpu_s: float, runs: int) -> float | None:
    return _r(cpu_s / runs * 1000, 2) if runs else None


# (label, key in a mode's figures, unit): the ratio table's rows
FIGURES = (
    ("runs accepted (POST /v1/runs 202) per s", "accepted_per_s", "/s"),
    ("runs recorded (runs.recorded.v1) per s", "runs_recorded_per_s", "/s"),
    ("runs that reached evidence.recorded per s", "evidence_per_s", "/s"),
    ("end-to-end runs.recorded -> evidence.recorded p50", "e2e_p50_ms", "ms"),
    ("end-to-end p99", "e2e_p99_ms", "ms"),
    ("broker CPU per 1,000 runs", "broker_cpu_s_per_1000_runs", "s"),
    ("service processes' CPU per 1,000 runs", "services_cpu_s_per_1000_runs", "s"),
    ("brokers' CPU, % of one core, idle (before the load)", "broker_cpu_pct_idle", "%"),
    ("brokers' CPU, % of one core, under the load", "broker_cpu_pct_load", "%"),
    ("service processes' CPU, % of one core, idle", "services_cpu_pct_idle", "%"),
    ("service processes' CPU, % of one core, under the load", "services_cpu_pct_load", "%"),
    ("consumer lag, max of the sum over groups", "lag_total_max", "msgs"),
    ("consumer lag (sum) when the load stopped", "lag_total_at_load_end", "msgs"),
    ("chat round trip p50 (gateway)", "chat_p50_ms", "ms"),
    ("chat round trip p99 (gateway)", "chat_p99_ms", "ms"),
)


# what TLS + SCRAM costs on the client hops, cluster vs cluster-plaintext: these rows of FIGURES
TLS_FIGURES = tuple(next(f for f in FIGURES if f[1] == key) for key in (
    "chat_p50_ms", "chat_p99_ms", "e2e_p50_ms", "e2e_p99_ms", "runs_recorded_per_s",
    "broker_cpu_s_per_1000_runs", "services_cpu_s_per_1000_runs", "broker_cpu_pct_load",
    "lag_total_max"))


def tls_rows(tls: dict, plaintext: dict) -> list[dict]:
    """One row per TLS figure: the cluster with its clients on PLAINTEXT and on SASL_SSL, what
    TLS + SCRAM added (SASL_SSL - PLAINTEXT) and the ratio (None where either is missing)."""
    rows = []
    for label, key, unit in TLS_FIGURES:
        a, b = plaintext.get(key), tls.get(key)
        both = isinstance(a, int | float) and isinstance(b, int | float)
        rows.append({"figure": label, "key": key, "unit": unit, "plaintext": a, "tls": b,
                     "added": _r(b - a, 2) if both else None,
                     "ratio": _r(b / a, 2) if both and a else None})
    return rows


def ratio_rows(single: dict, cluster: dict) -> list[dict]:
    """One row per figure: both values and cluster / single (None when either is missing or
    the single node's is 0)."""
    rows = []
    for label, key, unit in FIGURES:
        a, b = single.get(key), cluster.get(key)
        ratio = _r(b / a, 2) if isinstance(a, int | float) and isinstance(b, int | float) \
            and a else None
        rows.append({"figure": label, "key": key, "unit": unit, "single": a, "cluster": b,
                     "ratio": ratio})
    return rows


def _load(mode: dict) -> str:
    v = mode.get("load_average")
    return f"load {v['start']}→{v['end']}" if v else "not run"


def _fmt(x: object, unit: str, sign: bool = False) -> str:
    if x is None:
        return "-"
    if isinstance(x, int):
        num = f"{x:+,}" if sign else f"{x:,}"
    else:
        num = f"{x:+}" if sign else f"{x}"
    return f"{num}{unit}" if unit in ("/s", "×", "%") else f"{num} {unit}"


def markdown(result: dict) -> str:
    s, c = result["modes"].get("single", {}), result["modes"].get("cluster", {})
    lines = [f"| figure | single node, PLAINTEXT ({_load(s)}) | 3 nodes, SASL_SSL ({_load(c)}) | "
             "cluster / single |", "|---|---:|---:|---:|"]
    for row in result["ratios"]:
        lines.append(f"| {row['figure']} | {_fmt(row['single'], row['unit'])} | "
                     f"{_fmt(row['cluster'], row['unit'])} | {_fmt(row['ratio'], '×')} |")
    return "\n".join(lines)


def tls_markdown(result: dict) -> str:
    """The cluster with and without TLS + SCRAM on its client listeners (``result["tls"]``)."""
    p, c = result["modes"]["cluster-plaintext"], result["modes"]["cluster"]
    lines = [f"| figure | 3 nodes, clients on PLAINTEXT ({_load(p)}) | 3 nodes, clients on "
             f"SASL_SSL + SCRAM ({_load(c)}) | added by TLS + SCRAM | SASL_SSL / PLAINTEXT |",
             "|---|---:|---:|---:|---:|"]
    for row in result["tls"]:
        lines.append(f"| {row['figure']} | {_fmt(row['plaintext'], row['unit'])} | "
                     f"{_fmt(row['tls'], row['unit'])} | {_fmt(row['added'], row['unit'], True)} "
                     f"| {_fmt(row['ratio'], '×')} |")
    return "\n".join(lines)


def _r(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


# ------------------------------------------------------------------------------- measuring
class Sampler:
    """Consumer lag of every group every ``interval`` s, in a thread, until stopped."""

    def __init__(self, options: object, interval: float) -> None:
        self.options, self.interval = options, interval
        self.samples: list[tuple[float, dict[str, int]]] = []
        self.errors = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            t = time.time()
            try:
                self.samples.append((t, asyncio.run(faults.consumer_lag(self.options))))
            except Exception:  # noqa: BLE001 - a missed sample is counted, the run goes on
                self.errors += 1
            self.stop.wait(max(0.0, self.interval - (time.time() - t)))

    def last(self) -> dict[str, int] | None:
        return self.samples[-1][1] if self.samples else None


def cpu_of(pids: list[int]) -> dict[int, float]:
    ticks = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            out[pid] = proc_cpu_seconds(Path(f"/proc/{pid}/stat").read_text(), ticks)
    return out


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU used between two snapshots by the processes alive in both (a process that died in
    between would be a fault: none is injected here, and the figures name the pids counted)."""
    return sum(after[p] - before[p] for p in before if p in after)


def service_pids(svc: object) -> list[int]:
    procs = svc.procs  # type: ignore[attr-defined]
    return [p.pid for name, p in procs.items() if name not in ("sites", "engine")
            and p.poll() is None]


def run_mode(mode: str, args: argparse.Namespace, top: Path) -> dict:
    """One private system in ``mode``, the load for ``args.duration`` s after a warm-up, its
    figures; everything it started is stopped before it returns."""
    state = top / mode
    state.mkdir(parents=True)
    ports: set[int] = set()
    infra = faults.Infra(state, ports, cluster=mode != "single",
                         plaintext=mode == "cluster-plaintext")
    lock = None
    out: dict = {"mode": mode, "instances": args.instances,
                 "service_clients": {"single": "PLAINTEXT", "cluster": "SASL_SSL + SCRAM-SHA-512",
                                     "cluster-plaintext": "PLAINTEXT (User:ANONYMOUS)"}[mode]}
    t_begin = time.monotonic()
    with faults.PrivateSystem(infra, out, mode) as system:
        log(f"{mode}: private infrastructure in {state}")
        infra.up()
        svc = system.svc = faults.Services(infra, state, ports, args.instances)
        lock = faults.prepare_retrieval(state, args.retrieval_index)
        api_key, brands, _prompts = faults.start_system(svc, args.retrieval_index)
        out["startup_s"] = round(time.monotonic() - t_begin, 1)
        options = infra.options()
        log(f"{mode}: system up in {out['startup_s']} s; brokers {infra.broker_pids()}")
        rates = {"chat": args.chat_rate, "run": args.run_rate / args.run_workers,
                 "refresh": args.refresh_rate, "collect": args.collect_rate}
        load = faults.Load(svc.gateway, api_key, brands, random.Random(args.seed), rates,
                           workers={"run": args.run_workers})
        # the brokers' and services' own CPU with no load (heartbeats, polls, relays, the
        # replicas' fetches), so the per-run figures can be read against it
        idle_pids = infra.broker_pids(), service_pids(svc)
        idle0 = cpu_of(idle_pids[0]), cpu_of(idle_pids[1])
        time.sleep(args.idle)
        idle1 = cpu_of(idle_pids[0]), cpu_of(idle_pids[1])
        sampler = Sampler(options, args.lag_interval)
        sampler.thread.start()
        load.start()
        time.sleep(args.warmup)  # first chats and first rebalances are not the steady state
        brokers, services = infra.broker_pids(), service_pids(svc)
        la0 = round(os.getloadavg()[0], 2)
        w0_wall, w0 = time.time(), time.monotonic()
        cpu0 = cpu_of(brokers), cpu_of(services)
        time.sleep(args.duration)
        cpu1 = cpu_of(brokers), cpu_of(services)
        w1_wall, w1 = time.time(), time.monotonic()
        la1 = round(os.getloadavg()[0], 2)
        lag_at_stop = sampler.last()
        load.join()
        faults.retire_schedule(svc, api_key, faults.MINUTELY)  # nothing new while draining
        log(f"{mode}: load stopped; draining (lag of every group to 0, at most "
            f"{args.drain_timeout:g} s)")
        drained = None
        deadline = time.monotonic() + args.drain_timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                if not any(asyncio.run(faults.consumer_lag(options)).values()):
                    drained = round(time.monotonic() - w1, 1)
                    break
            time.sleep(1)
        time.sleep(3)  # evidence's outbox relay publishes the last events after its commit
        sampler.stop.set()
        sampler.thread.join(timeout=60)
        runs = run_times([v for *_x, v in asyncio.run(
            faults.read_topic(options, faults.RUNS_RECORDED))])
        evidence = evidence_times([v for *_x, v in asyncio.run(
            faults.read_topic(options, "evidence.recorded.v1"))])
        seconds = w1 - w0
        fig = pipeline(runs, evidence, w0_wall, w1_wall)
        ops = [op for op in load.ops if w0 <= op.t_start < w1]
        accepted = [op for op in ops if op.kind == "run" and op.outcome == "acked"]
        chats = [op for op in ops if op.kind == "chat"]
        chat_ms = [(op.t_end - op.t_start) * 1000 for op in chats if op.outcome == "acked"]
        broker_cpu = cpu_delta(cpu0[0], cpu1[0])
        services_cpu = cpu_delta(cpu0[1], cpu1[1])
        lags = lag_summary(sampler.samples, w1_wall)
        total = lags.get("total", {})
        out.update(fig)
        out.update({
            "window_s": round(seconds, 1), "warmup_s": args.warmup,
            "load_average": {"start": la0, "end": la1},
            "accepted": len(accepted), "accepted_per_s": _r(len(accepted) / seconds, 2),
            "ops": faults._count(f"{op.kind} {op.outcome}" for op in ops),
            "chat": {"asked": len(chats), "answered": len(chat_ms),
                     "not_answered": faults._count(op.reason.split(":")[0] for op in chats
                                                   if op.outcome != "acked")},
            "chat_p50_ms": _r(percentile(chat_ms, 50), 1),
            "chat_p99_ms": _r(percentile(chat_ms, 99), 1),
            "broker_pids": brokers, "broker_cpu_s": round(broker_cpu, 2),
            "broker_cpu_pct_idle": _r(cpu_delta(idle0[0], idle1[0]) / args.idle
                                      * 100, 1) if args.idle else None,
            "broker_cpu_pct_load": _r(broker_cpu / seconds * 100, 1),
            "services_cpu_pct_idle": _r(cpu_delta(idle0[1], idle1[1]) / args.idle
                                        * 100, 1) if args.idle else None,
            "services_cpu_pct_load": _r(services_cpu / seconds * 100, 1),
            "broker_cpu_s_per_1000_runs": cpu_per_1000(broker_cpu, fig["runs_recorded"]),
            "service_processes": len(services), "services_cpu_s": round(services_cpu, 2),
            "services_cpu_s_per_1000_runs": cpu_per_1000(services_cpu, fig["runs_recorded"]),
            "lag_total_max": total.get("max"), "lag_total_at_load_end": total.get("at_load_end"),
            "lag_at_stop": lag_at_stop, "lag_zero_after_load_s": drained,
            "lag_samples": len(sampler.samples), "lag_sample_errors": sampler.errors,
            "lag": lags})
        log(f"{mode}: {fig['runs_recorded_per_s']} runs/s recorded, "
            f"{fig['evidence_per_s']} /s to evidence, e2e p50/p99 {fig['e2e_p50_ms']}/"
            f"{fig['e2e_p99_ms']} ms, chat p50 {out['chat_p50_ms']} ms, broker CPU "
            f"{out['broker_cpu_s_per_1000_runs']} s per 1,000 runs (load {la0}->{la1})")
    if lock is not None:  # the next mode takes the retrieval index's lock again
        lock.close()
    out["wall_s"] = round(time.monotonic() - t_begin, 1)
    if "error" not in out and not args.keep:
        shutil.rmtree(state, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=300,
                    help="seconds measured per mode, after the warm-up (the issue: 600)")
    ap.add_argument("--warmup", type=float, default=15, help="seconds of load not measured")
    ap.add_argument("--idle", type=float, default=10,
                    help="seconds of CPU measured with no load, before it starts")
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--modes", default="single,cluster",
                    help=f"run in the order given, of {','.join(MODES)}")
    ap.add_argument("--instances", type=int, default=2,
                    help="processes per consumer service (the gateway runs once)")
    ap.add_argument("--run-rate", type=float, default=4.0,
                    help="POST /v1/runs per second, over all run workers")
    ap.add_argument("--run-workers", type=int, default=2)
    ap.add_argument("--chat-rate", type=float, default=1.0, help="chats per second")
    ap.add_argument("--refresh-rate", type=float, default=1 / 20)
    ap.add_argument("--collect-rate", type=float, default=1 / 10,
                    help="on-demand collection slots per second (6 samples each)")
    ap.add_argument("--lag-interval", type=float, default=5)
    ap.add_argument("--drain-timeout", type=float, default=120)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the private state folders")
    ap.add_argument("--retrieval-index", type=Path, default=ROOT / ".state" / "e2e-retrieval")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    if set(modes) - set(MODES) or not modes:
        ap.error(f"--modes: a subset of {','.join(MODES)}")
    # SIGTERM (a timeout, a cancel) unwinds like Ctrl-C: run_mode's finally stops what it started
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    top = ROOT / ".state" / "cluster-bench" / time.strftime("run-%Y%m%d-%H%M%S")
    if top.parent.exists():  # earlier runs' state (their processes are gone)
        for old in top.parent.iterdir():
            shutil.rmtree(old, ignore_errors=True)
    result: dict = {
        "command": "benchmarks/cluster_pipeline.py " + " ".join(
            shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])),
        "seed": args.seed, "duration_s": args.duration, "cores": os.cpu_count(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "offered": {"runs_per_s": args.run_rate, "chats_per_s": args.chat_rate,
                    "collection_slots_per_s": args.collect_rate,
                    "refreshes_per_s": args.refresh_rate},
        "modes": {}}
    for mode in modes:
        result["modes"][mode] = run_mode(mode, args, top)
    result["ratios"] = ratio_rows(result["modes"].get("single", {}),
                                  result["modes"].get("cluster", {}))
    s, c = result["modes"].get("single", {}), result["modes"].get("cluster", {})
    if s.get("chat_p50_ms") is not None and c.get("chat_p50_ms") is not None:
        result["chat_p50_added_ms"] = round(c["chat_p50_ms"] - s["chat_p50_ms"], 1)
        result["chat_p50_added_note"] = (
            "single PLAINTEXT vs cluster SASL_SSL + SCRAM-SHA-512: TLS + SCRAM and three "
            "replicas together; --modes cluster,cluster-plaintext puts them apart")
    p = result["modes"].get("cluster-plaintext", {})
    if c and p:
        result["tls"] = tls_rows(c, p)
        if c.get("chat_p50_ms") is not None and p.get("chat_p50_ms") is not None:
            result["tls_chat_p50_added_ms"] = round(c["chat_p50_ms"] - p["chat_p50_ms"], 1)
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    result["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    if s or c:
        print(markdown(result))
    if "chat_p50_added_ms" in result:
        print(f"chat p50 added on the cluster: {result['chat_p50_added_ms']} ms "
              f"({result['chat_p50_added_note']})")
    if "tls" in result:
        print(tls_markdown(result))
        print(f"chat p50 added by TLS + SCRAM on the cluster's client listeners: "
              f"{result.get('tls_chat_p50_added_ms')} ms")
    errors = [m for m, r in result["modes"].items() if "error" in r]
    for m in errors:
        log(f"{m}: {result['modes'][m]['error']}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
