"""The pure parts of benchmarks/cluster_pipeline.py (issue #26): percentiles, the end-to-end
latency from the events' envelopes, the lag samples' summary, /proc CPU parsing and the ratio
table, the TLS + SCRAM table (the cluster with its clients on SASL_SSL and on PLAINTEXT). The
benchmark itself (private systems, minutes each) is run by hand: its commands are in
docs/benchmarks.md. ``bench``: tests/faults/conftest.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

pytestmark = pytest.mark.unit
T0 = datetime(2026, 12, 5, 15, 0, tzinfo=UTC)


def _env(payload: dict, at: datetime) -> bytes:
    # the wire format: pydantic writes UTC datetimes with a trailing Z
    return json.dumps({"event_id": "e", "event_type": "X", "schema_version": 1,
                       "occurred_at": at.isoformat().replace("+00:00", "Z"),
                       "correlation_id": "c", "producer": "p", "payload": payload}).encode()


def test_percentile_interpolates_between_closest_ranks(bench):
    assert bench.percentile([], 50) is None
    assert bench.percentile([7.0], 99) == 7.0
    assert bench.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    xs = [float(i) for i in range(1, 101)]  # 1..100
    assert bench.percentile(xs, 99) == pytest.approx(99.01)
    assert bench.percentile(xs, 0) == 1.0 and bench.percentile(xs, 100) == 100.0


def test_end_to_end_latency_from_the_envelopes(bench):
    runs = [
        _env({"run_id": "r1", "source": "external"}, T0 + timedelta(seconds=1)),
        _env({"run_id": "r2", "source": "collector"}, T0 + timedelta(seconds=2)),
        # a redelivery keeps the first time; poison and a run before the window are skipped
        _env({"run_id": "r1", "source": "external"}, T0 + timedelta(seconds=5)),
        b"{not json",
        None,
        _env({"run_id": "r0", "source": "external"}, T0 - timedelta(seconds=1)),
        _env({"run_id": "r3", "source": "assistant"}, T0 + timedelta(seconds=9)),
    ]
    evidence = [
        _env({"reference": {"kind": "run", "ref_id": "r1"}},
             T0 + timedelta(seconds=1, milliseconds=40)),
        # the same answer stored again for another reference: the first event counts
        _env({"reference": {"kind": "run", "ref_id": "r1"}}, T0 + timedelta(seconds=3)),
        _env({"reference": {"kind": "run", "ref_id": "r2"}},
             T0 + timedelta(seconds=2, milliseconds=160)),
        # an engine response of r3 is not r3's answer; r3 reaches the log after the window
        _env({"reference": {"kind": "engine_response", "ref_id": "r3"}},
             T0 + timedelta(seconds=9, milliseconds=10)),
        _env({"reference": {"kind": "run", "ref_id": "r3"}}, T0 + timedelta(seconds=11)),
    ]
    r, e = bench.run_times(runs), bench.evidence_times(evidence)
    assert set(r) == {"r0", "r1", "r2", "r3"} and r["r1"][0] == (T0 + timedelta(seconds=1)).timestamp()
    assert set(e) == {"r1", "r2", "r3"}
    fig = bench.pipeline(r, e, T0.timestamp(), T0.timestamp() + 10)
    assert fig["runs_recorded"] == 3 and fig["runs_by_source"] == {
        "external": 1, "collector": 1, "assistant": 1}
    assert fig["runs_recorded_per_s"] == 0.3
    assert fig["evidence_reached"] == 3 and fig["evidence_reached_in_window"] == 2
    assert fig["evidence_per_s"] == 0.2
    # latencies 40, 160 and 2000 ms
    assert fig["e2e_p50_ms"] == pytest.approx(160.0)
    assert fig["e2e_p99_ms"] == pytest.approx(160 + (2000 - 160) * 0.98, abs=0.1)
    assert fig["e2e_max_ms"] == pytest.approx(2000.0)


def test_no_run_reached_gives_no_latency(bench):
    fig = bench.pipeline({"r": (5.0, "external")}, {}, 0.0, 10.0)
    assert fig["runs_recorded"] == 1 and fig["evidence_reached"] == 0
    assert fig["e2e_p50_ms"] is None and fig["e2e_p99_ms"] is None and fig["e2e_max_ms"] is None


def test_lag_summary_per_group_and_total(bench):
    samples = [(100.0, {"classifier": 0, "evidence": 2}),
               (105.0, {"classifier": 7, "evidence": 1, "gateway-x": 0}),
               (110.0, {"classifier": 3}),  # evidence missing from this sample: no value
               (115.0, {"classifier": 0, "evidence": 0, "gateway-x": 0})]
    s = bench.lag_summary(samples, load_end=111.0)
    assert s["classifier"] == {"max": 7, "mean": 2.5, "at_load_end": 3, "last": 0,
                               "series": [(0.0, 0), (5.0, 7), (10.0, 3), (15.0, 0)]}
    assert s["evidence"]["max"] == 2 and s["evidence"]["at_load_end"] == 1
    assert s["evidence"]["series"] == [(0.0, 2), (5.0, 1), (15.0, 0)]
    assert s["gateway-x"]["series"][0] == (5.0, 0)
    assert s["total"]["max"] == 8 and s["total"]["at_load_end"] == 3 and s["total"]["last"] == 0
    assert bench.lag_summary([], 0.0) == {}


def test_proc_stat_cpu_seconds(bench):
    # a command name with a space and a parenthesis; utime 250 and stime 50 ticks at 100 Hz
    stat = "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 60 0 12345"
    assert bench.proc_cpu_seconds(stat, 100) == 3.0
    assert bench.cpu_per_1000(3.0, 1500) == 2.0 and bench.cpu_per_1000(3.0, 0) is None
    assert bench.cpu_delta({1: 1.0, 2: 5.0, 3: 1.0}, {1: 2.5, 2: 6.0}) == 2.5


def test_ratio_table(bench):
    single = {"runs_recorded_per_s": 5.0, "e2e_p50_ms": 40.0, "broker_cpu_s_per_1000_runs": 10.0,
              "chat_p50_ms": 200.0, "lag_total_max": 0}
    cluster = {"runs_recorded_per_s": 4.9, "e2e_p50_ms": 120.0,
               "broker_cpu_s_per_1000_runs": 45.0, "chat_p50_ms": 260.0, "lag_total_max": 12}
    rows = {r["key"]: r for r in bench.ratio_rows(single, cluster)}
    assert [r[1] for r in bench.FIGURES] == list(rows)
    assert rows["runs_recorded_per_s"]["ratio"] == 0.98
    assert rows["e2e_p50_ms"]["ratio"] == 3.0
    assert rows["broker_cpu_s_per_1000_runs"]["ratio"] == 4.5
    assert rows["lag_total_max"]["ratio"] is None  # 0 on the single node: no ratio
    assert rows["accepted_per_s"]["single"] is None and rows["accepted_per_s"]["ratio"] is None
    md = bench.markdown({"modes": {"single": {"load_average": {"start": 1.2, "end": 3.4}},
                                   "cluster": {}}, "ratios": list(rows.values())})
    assert "load 1.2→3.4" in md and "not run" in md
    assert "| end-to-end runs.recorded -> evidence.recorded p50 | 40.0 ms | 120.0 ms | 3.0× |" in md


def test_tls_table_cluster_with_and_without_tls_and_scram(bench):
    tls = {"chat_p50_ms": 133.0, "chat_p99_ms": 700.0, "e2e_p50_ms": 41.0,
           "runs_recorded_per_s": 5.7, "lag_total_max": 3,
           "load_average": {"start": 2.0, "end": 2.5}}
    plain = {"chat_p50_ms": 120.5, "chat_p99_ms": 650.0, "e2e_p50_ms": 36.0,
             "runs_recorded_per_s": 5.7, "lag_total_max": 0,
             "load_average": {"start": 1.5, "end": 1.9}}
    rows = {r["key"]: r for r in bench.tls_rows(tls, plain)}
    assert [r[1] for r in bench.TLS_FIGURES] == list(rows)
    assert rows["chat_p50_ms"]["added"] == 12.5 and rows["chat_p50_ms"]["ratio"] == 1.1
    assert rows["e2e_p50_ms"]["added"] == 5.0
    assert rows["lag_total_max"]["added"] == 3 and rows["lag_total_max"]["ratio"] is None
    assert rows["e2e_p99_ms"]["added"] is None  # missing in both: no difference
    md = bench.tls_markdown({"modes": {"cluster": tls, "cluster-plaintext": plain},
                             "tls": list(rows.values())})
    assert "clients on PLAINTEXT (load 1.5→1.9)" in md and "SCRAM (load 2.0→2.5)" in md
    assert "| chat round trip p50 (gateway) | 120.5 ms | 133.0 ms | +12.5 ms | 1.1× |" in md
    assert bench.MODES == ("single", "cluster", "cluster-plaintext")
