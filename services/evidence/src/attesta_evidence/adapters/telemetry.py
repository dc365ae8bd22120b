"""Prometheus instruments of the evidence service, served on its HTTP API's ``GET /metrics``
(``attesta_platform.http.add_metrics_route``; docs/metrics.md and docs/evidence.md list them).

Writes are counted once their transaction committed: intake after ``record_evidence``'s
transaction (a batch rolled back and redelivered is not counted twice), tree heads after the
signer's transaction inserted the head. Reads (lookups, checks, proofs) are counted when they
are answered.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

INTAKE = Counter(
    "attesta_evidence_intake_total",
    "Intake records committed (Kafka: runs.recorded.v1 and groundtruth.source-fetched.v1), by "
    "reference kind (run, ground_truth_source) and outcome: stored (new bytes, appended to the "
    "log), duplicate (bytes already stored under that SHA-256, new reference only), unchanged "
    "(bytes and reference already stored: a redelivery, nothing written)",
    ["kind", "outcome"])
TREE_HEADS = Counter(
    "attesta_evidence_tree_heads_signed_total",
    "Signed tree heads issued (committed): one per growth of the log seen by a signer")
LOOKUPS = Counter(
    "attesta_evidence_lookups_total",
    "Public lookups GET /v1/public/evidence/{sha256}, by result (found, not_found, "
    "invalid_sha256)",
    ["result"])
CHECKS = Counter(
    "attesta_evidence_checks_total",
    "Public byte-for-byte checks POST /v1/public/evidence/{sha256}/check, by result (match, "
    "mismatch, not_found, invalid_sha256, invalid_content)",
    ["result"])
PROOFS = Counter(
    "attesta_evidence_proof_requests_total",
    "Proof requests on /v1/public/log/inclusion and /v1/public/log/consistency, by kind "
    "(inclusion, consistency) and outcome (ok, invalid_range)",
    ["kind", "outcome"])
PROOF_SECONDS = Histogram(
    "attesta_evidence_proof_seconds",
    "Time to build one proof that was served (outcome ok), by kind",
    ["kind"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
