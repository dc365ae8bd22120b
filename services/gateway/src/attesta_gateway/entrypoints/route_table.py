"""Every route the gateway passes on to an internal service under the same path, in the order
of the OpenAPI document (``entrypoints/forwarded.py`` turns each row into a route). A new
forwarded route is a new row, with the contract models of its body and answer."""

# No `from __future__ import annotations`: the query parameters' annotations are objects.

from typing import Annotated, Literal

from fastapi import Query
from fastapi.responses import Response

from attesta_contracts.api import alerts as al
from attesta_contracts.api import classifier as cls
from attesta_contracts.api import collector as col
from attesta_contracts.api import evidence as ev
from attesta_contracts.classification import CitationClass, DecidedBy
from attesta_gateway.domain.commands import JSON_ONLY
from attesta_gateway.entrypoints.api import (
    AUTH_ERRORS,
    BRAND_ID_PATTERN,
    OPAQUE_ID_PATTERN,
    PUBLIC_ERRORS,
    errors,
)
from attesta_gateway.entrypoints.forwarded import REQUIRED, Q, Route
from attesta_platform.http import ErrorResponse

CSV = "text/csv"
NDJSON = "application/x-ndjson"
Text = Annotated[str | None, Query(min_length=1, max_length=100)]
BrandIdQ = Annotated[str | None, Query(pattern=BRAND_ID_PATTERN)]
IdQ = Annotated[str | None, Query(pattern=OPAQUE_ID_PATTERN)]
Cursor = Annotated[str | None, Query(min_length=1, max_length=500)]
FROM = Q("from_", Annotated[cls.IsoTime | None, Query(alias="from")])
TO = Q("to", Annotated[cls.IsoTime | None, Query()])
TAG = Q("tag", Annotated[str | None, Query(
    min_length=1, max_length=100,
    description="any of the collector prompt's tags (topic, persona or funnel)")])
# The filters of GET /v1/runs and its export.
RUN_FILTERS = (
    Q("engine", Text), Q("brand_id", BrandIdQ),
    Q("status", Annotated[cls.RunStatus | None, Query()]),
    Q("citation_class", Annotated[CitationClass | None, Query()]),
    Q("decided_by", Annotated[DecidedBy | None, Query()]),
    TAG, Q("source", Text), FROM, TO,
    Q("collection_method", Annotated[str | None, Query(
        min_length=1, max_length=100,
        description="only answers collected this way: api, api_with_search, assistant")]))
# The window, grouping and segment of GET /v1/metrics and its export (one spelling: the
# classifier's params.MetricsFilters).
METRICS_WINDOW = (
    Q("period", Annotated[cls.Period, Query()], cls.Period.WEEK), FROM, TO,
    Q("brand_id", BrandIdQ),
    Q("engine", Annotated[str | None, Query(min_length=1, max_length=100,
                                           description="only this engine's answers")]),
    Q("group_by", Annotated[str | None, Query(
        max_length=100, pattern=r"^[a-z, ]*$",
        description="comma-separated dimensions of each row: engine (the default), "
                    "topic, persona, funnel, branded; a dimension left out is summed "
                    "over (without engine: all engines together); empty: one row per "
                    "brand and period")]),
    *(Q(tag, Annotated[str | None, Query(min_length=1, max_length=100,
                                         description=f"only prompts with this {tag} tag")])
      for tag in ("topic", "persona", "funnel")),
    Q("branded", Annotated[bool | None, Query(
        description="only prompts that name (true) or do not name (false) a tracked brand")]),
    # Issue #25 item 6: the ad-hoc chats with the assistant are left out unless asked for.
    Q("source", Annotated[str | None, Query(
        min_length=1, max_length=100,
        description="only runs of this source (collector, external, assistant, ...); "
                    "source=assistant gives the ad-hoc chats with the assistant alone")]),
    Q("include_chats", Annotated[bool, Query(
        description="count the ad-hoc chats with the assistant (source assistant) too; by "
                    "default a brand's figures are over its prompts only")], False),
    Q("collection_method", Annotated[str | None, Query(
        min_length=1, max_length=100,
        description="only answers collected this way (api, api_with_search, assistant); "
                    "'any': every method together; without it, rows are split by method")]))


def _public(name: str, method: Literal["GET", "POST"], path: str, model: object, *codes: int,
            **more: object) -> Route:
    return Route(name, method, path, "evidence", model, errors(*codes, *PUBLIC_ERRORS),
                 tags=("public evidence",), public=True, **more)  # type: ignore[arg-type]


def _log(name: str, path: str, model: object, summary: str, *query: Q) -> Route:
    return _public(name, "GET", path, model, summary=summary, query=query)


PUBLIC = (
    _public("evidence_get", "GET", "/v1/public/evidence/{sha256}", ev.EvidenceView, 404,
            summary="Does this evidence exist? Its metadata and inclusion proof"),
    _public("evidence_check", "POST", "/v1/public/evidence/{sha256}/check",
            ev.EvidenceCheckResult, 404, 413, body=ev.EvidenceCheckRequest,
            summary="Byte-for-byte check of content against stored evidence"),
    _log("log_tree_head", "/v1/public/log/tree-head", ev.SignedTreeHead,
         "Latest signed tree head of the log"),
    _log("log_consistency", "/v1/public/log/consistency", ev.ConsistencyProof,
         "RFC 9162 consistency proof between two tree sizes",
         Q("first", Annotated[int, Query(ge=1)], REQUIRED),
         Q("second", Annotated[int, Query(ge=1)], REQUIRED)),
    _log("log_inclusion", "/v1/public/log/inclusion", ev.InclusionProof,
         "RFC 9162 inclusion proof of a leaf in an older tree",
         Q("leaf_index", Annotated[int, Query(ge=0)], REQUIRED),
         Q("tree_size", Annotated[int, Query(ge=1)], REQUIRED)),
    _log("log_leaves", "/v1/public/log/leaves", ev.LogLeaves,
         "Log entries [start, end) for audit",
         Q("start", Annotated[int, Query(ge=0)], REQUIRED),
         Q("end", Annotated[int, Query(ge=0)], REQUIRED)),
    _log("log_public_key", "/v1/public/log/public-key", ev.LogPublicKey,
         "The log's Ed25519 public key"),
)

EVIDENCE = (
    Route("evidence_internal", "GET", "/v1/evidence/{sha256}", "evidence",
          ev.EvidenceInternalView, errors(400, 404, *AUTH_ERRORS), tags=("evidence",),
          summary="Evidence with the references your workspace holds"),
)

BRANDS = (
    Route("brand_create", "POST", "/v1/brands", "classifier", cls.Brand,
          errors(400, 409, 413, 404, *AUTH_ERRORS), ("brands",), "Track a brand",
          status_code=201, body=cls.BrandCreate, idempotency="optional"),
    Route("brand_list", "GET", "/v1/brands", "classifier", cls.BrandList, errors(*AUTH_ERRORS),
          ("brands",), "Brands of your workspace"),
    Route("brand_get", "GET", "/v1/brands/{brand_id}", "classifier", cls.Brand,
          errors(404, *AUTH_ERRORS), ("brands",)),
    Route("brand_update", "PATCH", "/v1/brands/{brand_id}", "classifier", cls.Brand,
          errors(404, 409, 413, *AUTH_ERRORS), ("brands",),
          "Change a brand (only the fields present)", body=cls.BrandUpdate),
    Route("ground_truth_refresh", "POST", "/v1/brands/{brand_id}/ground-truth/refresh",
          "classifier", cls.RefreshResult, errors(400, 404, 409, *AUTH_ERRORS),
          ("ground truth",), "Fetch the brand's sources and refresh its ground truth",
          idempotency="optional"),
    Route("ground_truth_get", "GET", "/v1/brands/{brand_id}/ground-truth", "classifier",
          cls.GroundTruth, errors(404, *AUTH_ERRORS), ("ground truth",),
          "The brand's active ground-truth facts and their hash (and, on request, the "
          "superseded facts with their validity)",
          query=(Q("include_superseded", Annotated[bool, Query()], False),)),
    Route("ground_truth_fact_add", "POST", "/v1/brands/{brand_id}/ground-truth/facts",
          "classifier", cls.GroundTruthFactView,
          {200: {"model": cls.GroundTruthFactView,
                 "description": "the same fact is already active"},
           **errors(400, 404, 409, 413, *AUTH_ERRORS)},
          ("ground truth",), "Add a manual ground-truth fact", status_code=201,
          body=cls.ManualFactCreate, idempotency="optional"),
    Route("brand_reverify", "POST", "/v1/brands/{brand_id}/reverify", "classifier",
          cls.ReverifyResult, errors(400, 404, 409, *AUTH_ERRORS), ("ground truth",),
          "Reclassify the brand's runs against its current ground truth",
          idempotency="optional"),
)

RUNS = (
    Route("run_create", "POST", "/v1/runs", "classifier", cls.RunAccepted,
          errors(400, 404, 409, 413, *AUTH_ERRORS), ("runs",),
          "Submit a run (prompt + AI answer) for classification", status_code=202,
          body=cls.RunCreate, idempotency="required"),
    Route("run_list", "GET", "/v1/runs", "classifier", cls.RunList,
          errors(400, *AUTH_ERRORS), ("runs",), "Runs of your workspace, newest first",
          query=(*RUN_FILTERS, Q("limit", Annotated[int, Query(ge=1, le=200)], 50),
                 Q("cursor", Cursor))),
    Route("run_get", "GET", "/v1/runs/{run_id}", "classifier", cls.RunView,
          errors(404, *AUTH_ERRORS), ("runs",)),
    Route("run_history", "GET", "/v1/runs/{run_id}/classifications", "classifier",
          cls.ClassificationHistory, errors(404, *AUTH_ERRORS), ("runs",),
          "Append-only classification history of a run (as of a time)",
          query=(Q("as_of", Annotated[cls.IsoTime | None, Query()]),)),
    Route("run_reclassify", "POST", "/v1/runs/{run_id}/reclassify", "classifier",
          cls.ReclassifyResult, errors(400, 404, 409, 413, *AUTH_ERRORS), ("runs",),
          "Manual reclassification (appends history; audited with your key id)",
          body=cls.ReclassifyRequest, idempotency="optional"),
)

METRICS = (
    Route("metrics_get", "GET", "/v1/metrics", "classifier", cls.MetricsResponse,
          errors(400, *AUTH_ERRORS), ("metrics",),
          "Citation rate, share of voice, confabulation rate, score",
          query=METRICS_WINDOW),
)


def _col(name: str, method: Literal["GET", "POST", "PUT", "PATCH"], path: str, model: object,
         *codes: int, summary: str | None = None, **more: object) -> Route:
    return Route(name, method, path, "collector", model, errors(*codes, *AUTH_ERRORS),
                 ("collection",), summary, **more)  # type: ignore[arg-type]


COLLECTION = (
    _col("prompt_create", "POST", "/v1/prompts", col.Prompt, 400, 409, 413, status_code=201,
         summary="Add a prompt (branded or not is decided from the tracked brands)",
         body=col.PromptSpec, idempotency="optional"),
    Route("prompt_import", "POST", "/v1/prompts/import", "collector", col.ImportResult,
          {**errors(413, *AUTH_ERRORS), 415: {
              "model": ErrorResponse, "description": "not text/csv or application/x-ndjson"}},
          ("collection",), "Bulk import prompts from CSV or JSONL: a report per row; a "
                           "re-import changes nothing",
          openapi_extra={"requestBody": {"required": True, "content": {
              CSV: {"schema": {"type": "string"}}, NDJSON: {"schema": {"type": "string"}}}}},
          formats={CSV: "csv", NDJSON: "jsonl", "application/jsonl": "jsonl"},
          formats_reason="send the file as text/csv or application/x-ndjson"),
    _col("prompt_list", "GET", "/v1/prompts", col.PromptList,
         summary="Prompts of your workspace (filter by set, tag, branded)",
         query=(Q("prompt_set", IdQ), Q("branded", bool | None),
                Q("tag", Annotated[str | None, Query(min_length=1, max_length=100)]),
                Q("include_retired", bool, False),
                Q("limit", Annotated[int, Query(ge=1, le=1000)], 200), Q("after", IdQ))),
    _col("prompt_get", "GET", "/v1/prompts/{prompt_id}", col.Prompt, 404),
    _col("prompt_update", "PATCH", "/v1/prompts/{prompt_id}", col.Prompt, 404, 409, 413,
         summary="Change a prompt", body=col.PromptUpdate),
    _col("prompt_retire", "POST", "/v1/prompts/{prompt_id}/retire", col.Prompt, 404,
         summary="Retire a prompt (no new samples; its history stays)"),
    _col("engine_create", "POST", "/v1/engines", col.Engine, 400, 409, 413, status_code=201,
         summary="Add an engine (OpenAI-compatible endpoint, or our assistant); its key is a "
                 "secret of this workspace, named by id",
         body=col.EngineSpec, idempotency="optional"),
    _col("engine_list", "GET", "/v1/engines", col.EngineList),
    _col("engine_replace", "PUT", "/v1/engines/{engine_id}", col.Engine, 404, 413,
         summary="Replace an engine's settings", body=col.EngineSpec),
    _col("engine_retire", "POST", "/v1/engines/{engine_id}/retire", col.Engine, 404),
    # No Idempotency-Key here: the gateway would keep a fingerprint of this body, and the body
    # is a key. A retry of a request that went through gets 409 (a live name is unique).
    _col("secret_create", "POST", "/v1/secrets", col.Secret, 409, 413, status_code=201,
         summary="Store an engine key for this workspace: write-only (never returned, never "
                 "logged), kept encrypted; engines name it by secret_id",
         body=col.SecretSpec),
    _col("secret_list", "GET", "/v1/secrets", col.SecretList,
         summary="Your workspace's engine secrets: id, name and dates (never the value)",
         query=(Q("include_retired", bool, False),)),
    _col("secret_retire", "POST", "/v1/secrets/{secret_id}/retire", col.Secret, 404,
         summary="Retire a secret: its encrypted value is erased; engines using it stop "
                 "sending it"),
    _col("schedule_create", "POST", "/v1/schedules", col.Schedule, 400, 409, 413,
         status_code=201,
         summary="Schedule prompts (by set or tag) × engines, cron or interval, N samples",
         body=col.ScheduleSpec, idempotency="optional"),
    _col("schedule_list", "GET", "/v1/schedules", col.ScheduleList),
    _col("schedule_replace", "PUT", "/v1/schedules/{schedule_id}", col.Schedule, 404, 413,
         body=col.ScheduleSpec),
    _col("schedule_retire", "POST", "/v1/schedules/{schedule_id}/retire", col.Schedule, 404),
    _col("schedule_run", "POST", "/v1/schedules/{schedule_id}/run", col.RunOnceResult, 404,
         409, status_code=202,
         summary="Plan one slot now (default: the current one); collectors pick it up. 409 "
                 "when the stored schedule cannot be planned (its plan_error says why)",
         body=col.RunOnce | None, body_required=False),
    _col("collection_list", "GET", "/v1/collections", col.CollectionList, 404,
         summary="Samples collected or failed (with the reason), by schedule, status, slot",
         query=(Q("schedule_id", IdQ),
                Q("status", Literal["pending", "awaiting_reply", "collected", "failed"] | None),
                Q("slot", Annotated[cls.IsoTime | None, Query()]),
                Q("brand_id", Annotated[str | None, Query(
                    pattern=BRAND_ID_PATTERN, description="label sources for this brand")]),
                Q("limit", Annotated[int, Query(ge=1, le=1000)], 200), Q("after", IdQ))),
    _col("collection_get", "GET", "/v1/collections/{collection_id}", col.Collection, 404),
    _col("collection_raw", "GET", "/v1/collections/{collection_id}/raw", None, 404,
         summary="The engine's raw response, byte for byte (its SHA-256 is on the run)"),
)


def _export(description: str, content: dict[str, object]) -> dict[int | str, dict[str, object]]:
    return {**errors(400, *AUTH_ERRORS), 200: {"content": content, "description": description}}


EXPORTS = (
    Route("export_runs", "GET", "/v1/exports/runs", "classifier", None, _export(
        "the runs matching the filters of GET /v1/runs: CSV, one row per (run, brand) with its "
        "current class, or JSON Lines of RunSummary",
        {CSV: {"schema": {"type": "string"}}, NDJSON: {"schema": {"type": "string"}}}),
        ("exports",), "Export runs as CSV or JSON Lines", response_class=Response,
        media_types=(CSV, NDJSON),
        query=(Q("format", Literal["csv", "jsonl"], "csv"), *RUN_FILTERS)),
    Route("export_metrics", "GET", "/v1/exports/metrics", "classifier", None, _export(
        "the metrics of GET /v1/metrics (same window, group_by and segment): CSV, one row "
        "per (brand, group, period) with every figure's value, successes, n, 95 % interval "
        "and whether the cell is underpowered; or the MetricsResponse JSON",
        {CSV: {"schema": {"type": "string"}},
         "application/json": {"schema": {"$ref": "#/components/schemas/MetricsResponse"}}}),
        ("exports",), "Export metrics as CSV or JSON", response_class=Response,
        media_types=(CSV, *JSON_ONLY),
        query=(Q("format", Literal["csv", "json"], "csv"), *METRICS_WINDOW)),
)

REVIEW = (
    Route("review_queue", "GET", "/v1/review/queue", "classifier", cls.ReviewQueue,
          errors(400, *AUTH_ERRORS), ("review",),
          "The review queue: pending pairs (oldest first), then the blind sample, with how "
          "many are pending and how long the oldest has waited",
          query=(Q("brand_id", BrandIdQ), Q("kind", Annotated[cls.ReviewKind | None, Query()]),
                 Q("limit", Annotated[int, Query(ge=1, le=200)], 50), Q("cursor", Cursor))),
    Route("review_item", "GET", "/v1/review/queue/{run_id}/{brand_id}", "classifier",
          cls.ReviewItem, errors(404, *AUTH_ERRORS), ("review",),
          "One pair to review: the answer with the brand's mentions, the facts with their "
          "hashes, and what the judge said (not on a blind sample item)"),
    Route("review_decide", "POST", "/v1/review/queue/{run_id}/{brand_id}/decision",
          "classifier", cls.ReviewDecisionResult, errors(400, 404, 409, 413, *AUTH_ERRORS),
          ("review",),
          "Record a person's class for the pair (appended to the history as decided_by human, "
          "or stored as a blind review of the judge's label)", status_code=201,
          body=cls.ReviewDecisionCreate, idempotency="optional"),
    Route("review_agreement", "GET", "/v1/review/agreement", "classifier", cls.JudgeAgreement,
          errors(400, *AUTH_ERRORS), ("review",),
          "Judge-human agreement over the blind reviews: per-class precision and Cohen's "
          "kappa, with n",
          query=(Q("judge_model", Annotated[str | None, Query(min_length=1, max_length=200)]),)),
)



def _alerts(name: str, method: Literal["GET", "POST", "PATCH", "DELETE"], path: str,
            model: object, *codes: int, summary: str | None = None, **more: object) -> Route:
    return Route(name, method, path, "classifier", model, errors(*codes, *AUTH_ERRORS),
                 ("alerts",), summary, **more)  # type: ignore[arg-type]


# Alerts (issue #25): rules need an editor, channels an admin, reads a viewer (domain/roles.py).
ALERTS = (
    _alerts("alert_rule_create", "POST", "/v1/alerts/rules", al.AlertRule, 413, status_code=201,
            summary="Watch a brand's metric in a segment: alerts fire only on a statistically "
                    "real change between two closed weeks, never on an underpowered cell",
            body=al.AlertRuleCreate, idempotency="optional"),
    _alerts("alert_rule_list", "GET", "/v1/alerts/rules", al.AlertRuleList,
            summary="Alert rules of your workspace"),
    _alerts("alert_rule_get", "GET", "/v1/alerts/rules/{rule_id}", al.AlertRule, 404),
    _alerts("alert_rule_update", "PATCH", "/v1/alerts/rules/{rule_id}", al.AlertRule, 404, 413,
            summary="Change, mute or unmute a rule (only the fields present)",
            body=al.AlertRuleUpdate),
    _alerts("alert_rule_delete", "DELETE", "/v1/alerts/rules/{rule_id}", None, 404,
            status_code=204, response_class=Response,
            summary="Delete a rule (the alerts it fired stay)"),
    _alerts("alert_rule_test", "POST", "/v1/alerts/rules/{rule_id}/test", al.TestAlertResult,
            404, status_code=202,
            summary="Send a test alert of the rule (its last closed week's figures, marked as "
                    "a test) through every channel of the workspace"),
    # No Idempotency-Key: the gateway would keep the answer, and the answer holds the secret.
    _alerts("alert_channel_create", "POST", "/v1/alerts/channels", al.AlertChannelCreated, 413,
            status_code=201,
            summary="Add a channel (signed webhook, Slack incoming webhook, e-mail); a URL must "
                    "pass the outbound policy (422 with the reason); the webhook signing "
                    "secret is shown once",
            body=al.AlertChannelCreate),
    _alerts("alert_channel_list", "GET", "/v1/alerts/channels", al.AlertChannelList,
            summary="Alert channels of your workspace (never their secrets)"),
    _alerts("alert_channel_delete", "DELETE", "/v1/alerts/channels/{channel_id}", None, 404,
            status_code=204, response_class=Response, summary="Delete a channel"),
    _alerts("alert_list", "GET", "/v1/alerts", al.AlertList,
            summary="Fired and test alerts, newest first",
            query=(Q("limit", Annotated[int, Query(ge=1, le=200)], 50), Q("cursor", Cursor))),
    _alerts("alert_get", "GET", "/v1/alerts/{alert_id}", al.AlertDetail, 404,
            summary="An alert with its figures, p-values, runs and delivery log"),
)

FORWARDED: tuple[Route, ...] = (*PUBLIC, *EVIDENCE, *BRANDS, *RUNS, *METRICS, *COLLECTION,
                                *EXPORTS, *REVIEW, *ALERTS)
