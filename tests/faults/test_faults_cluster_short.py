"""The fault harness on the cluster, short (issue #26): three Kafka nodes on SASL_SSL + SCRAM with
ACLs, every consumer service as two processes in one consumer group, each as its own principal,
under load, with three faults: kill -9 of the node leading the busiest partitions, kill -9 of
one instance of a service while its sibling keeps consuming, and a rolling restart of all three
nodes. Same oracle as the single node's short run: nothing acknowledged or planned lost or
doubled, tree heads consistent, dead letters only poison (none here), lag back to zero.
The long run (60+ faults over 20 minutes) and its table: docs/reliability.md."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]


def test_short_cluster_run_with_two_instances_loses_and_doubles_nothing(run_harness):
    # The harness injects every kind once within 3x --duration: at 60 s (a 180 s bound) a slow
    # leader recovery and rolling restart left no time for the third fault once (2026-12-06 CI).
    run = run_harness("--kafka", "cluster", "--instances", "2", "--faults", "leader,kill,rolling",
                      "--max-faults", "3", "--duration", "90", "--seed", "26", "--gap", "2", "5")
    result, summary = run.result, run.summary
    injected = sorted(row["fault"] for row in result["table"] if row["injected"])
    assert len(injected) == 3, result["table"]
    assert "Kafka node leading the busiest partitions kill -9" in injected, injected
    assert "Kafka rolling restart" in injected, injected
    # the kill took one of two instances down (the other kept consuming), not a lone process
    assert any(name.startswith("kill -9 one ") and name.endswith(" of 2 (down 5-15 s)")
               for name in injected), injected
    assert result["runs_acked"] > 0 and result["chat"]["answered"] > 0, summary
    assert result["lost"] == [] and result["doubled"] == [], summary
    assert result["chat"]["answered_twice"] == 0, summary
    assert result["faults_unrecovered"] == [], summary
    assert result["tree_heads_consistent"] == result["tree_heads_saved"] > 0, summary
    assert result["all_leaves_verify"] and result["evidence_included"] == result["runs_acked"]
    samples = result["collections"]
    assert samples["planned"] > 0 and samples["status"] == {"collected": samples["planned"]}, \
        samples
    assert result["problems"] == [], summary
    assert run.returncode == 0, summary
