"""The fault harness, short: the whole system on private Kafka/PostgreSQL/Redis (its own ports
and state folder, never the shared ones), under load, with one fault of every kind injected on a
seeded schedule (kill -9 of each service, PostgreSQL stopped, Redis stopped, the Kafka broker
killed, a poison message per input topic), the collector collecting from a local fake engine on
two schedules. Fails when anything acknowledged or any planned sample is lost or doubled,
a saved tree head is not consistent with the final one, a dead letter is not a poison message,
or consumer lag does not return to zero. The long run and its table: docs/reliability.md."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]


def test_short_fault_run_loses_and_doubles_nothing(run_harness):
    run = run_harness("--duration", "100", "--seed", "17", "--gap", "2", "5", grace=120)
    result, summary = run.result, run.summary
    assert result["runs_acked"] > 0 and result["chat"]["answered"] > 0, summary
    kinds = {row["fault"].split()[0] for row in result["table"] if row["injected"]}
    assert {"kill", "PostgreSQL", "Redis", "Kafka", "poison"} <= kinds, result["table"]
    # this seed's first deck kills the collector (with samples leased or planned)
    assert any(row["fault"] == "kill -9 collector" for row in result["table"]), result["table"]
    assert result["lost"] == [] and result["doubled"] == [], summary
    assert result["chat"]["answered_twice"] == 0, summary
    assert result["tree_heads_consistent"] == result["tree_heads_saved"] > 0, summary
    assert result["all_leaves_verify"] and result["evidence_included"] == result["runs_acked"]
    samples = result["collections"]
    assert samples["planned"] > 0 and samples["status"] == {"collected": samples["planned"]}, \
        samples
    assert samples["minutely_slots"] > 0 and samples["on_demand_slots_acked"] > 0, samples
    assert result["problems"] == [], summary
    assert run.returncode == 0, summary
