"""The contract's views of what the use cases return (read models -> ``attesta_contracts`` API
models): one function per view, shared by the routes and the exports."""

from __future__ import annotations

from dataclasses import asdict

from attesta_classifier.domain.commands import GetMetrics
from attesta_classifier.domain.metrics import Proportion
from attesta_classifier.entrypoints import schemas
from attesta_classifier.service_layer.ground_truth import GroundTruthView, RefreshOutcome
from attesta_classifier.service_layer.metrics import MetricsReport
from attesta_classifier.service_layer.review import AgreementReport, Decided, QueuePage, ReviewItem
from attesta_classifier.service_layer.runs import RunWithStates
from attesta_classifier.service_layer.unit_of_work import (
    HistoryRow, PairState, StoredBrand, StoredFact)
from attesta_contracts.api import classifier as api
from attesta_contracts.classification import CitationClass


def brand(b: StoredBrand) -> api.Brand:
    return api.Brand(brand_id=b.brand_id, workspace_id=b.workspace_id, name=b.name,
                     aliases=list(b.aliases), domains=list(b.domains),
                     competitors=list(b.competitors), sources=list(b.sources),
                     created_at=b.created_at, updated_at=b.updated_at)


def fact(f: StoredFact) -> api.GroundTruthFactView:
    return api.GroundTruthFactView(
        fact_id=f.fact_id, brand_id=f.brand_id, type=f.type, text=f.text,
        source_url=f.source_url, fetched_at=f.fetched_at, attribution=f.attribution,
        content_sha256=f.content_sha256, active=f.active, superseded_at=f.superseded_at,
        recorded_at=f.created_at)


def ground_truth(brand_id: str, g: GroundTruthView) -> api.GroundTruth:
    return api.GroundTruth(brand_id=brand_id, ground_truth_hash=g.ground_truth_hash,
                           facts=[fact(f) for f in g.facts],
                           superseded=None if g.superseded is None else [fact(f) for f in g.superseded])


def refresh_result(o: RefreshOutcome) -> api.RefreshResult:
    return api.RefreshResult(
        refresh_id=o.refresh_id, brand_id=o.brand_id, changed=o.changed,
        ground_truth_hash=o.ground_truth_hash, active_fact_ids=o.active_fact_ids,
        added_fact_ids=o.added_fact_ids, superseded_fact_ids=o.superseded_fact_ids,
        sources=[api.SourceFetchOutcome(url=s.url, ok=s.ok, http_status=s.http_status,
                                        sha256=s.sha256, bytes=s.bytes,
                                        facts_extracted=s.facts_extracted, error=s.error)
                 for s in o.sources])


def state(s: PairState) -> api.RunBrandState:
    classified = s.status == "classified"
    return api.RunBrandState(
        brand_id=s.brand_id, status=s.status,
        citation_class=s.citation_class if classified else None,
        decided_by=s.decided_by if classified else None,
        judge_model=s.judge_model if classified else None,
        classification_id=str(s.classification_id) if s.classification_id else None,
        ground_truth_hash=s.ground_truth_hash, reason=s.reason, updated_at=s.updated_at)


def run_summary(item: RunWithStates) -> api.RunSummary:
    r, states = item
    return api.RunSummary(
        run_id=r.run_id, engine=r.engine, model=r.model, answer_sha256=r.answer_sha256,
        source=r.source, answered_at=r.answered_at, recorded_at=r.recorded_at,
        brands=[state(s) for s in states], log_index=r.log_index)


def positioned_state(s: PairState) -> schemas.PositionedBrandState:
    """The pair's state with the brand's position in the answer (its current class's)."""
    classified = s.status == "classified"
    return schemas.PositionedBrandState(
        **state(s).model_dump(), position=s.position if classified else None,
        named_order=s.named_order if classified else None)


def run_view(item: RunWithStates) -> schemas.RunDetail:
    r, states = item
    return schemas.RunDetail(
        run_id=r.run_id, workspace_id=r.workspace_id, engine=r.engine, model=r.model,
        prompt=r.prompt, answer=r.answer, answer_sha256=r.answer_sha256,
        brand_ids=list(r.brand_ids), source=r.source, requested_at=r.requested_at,
        answered_at=r.answered_at, recorded_at=r.recorded_at,
        brands=[positioned_state(s) for s in states], collection_method=r.collection_method,
        model_build=r.model_build)


def classification(r: HistoryRow) -> api.Classification:
    d = asdict(r)
    d["classification_id"] = str(d["classification_id"])
    d.pop("workspace_id")
    return api.Classification(**d)


def review_queue(page: QueuePage) -> api.ReviewQueue:
    c, now = page.counts, page.now
    return api.ReviewQueue(
        items=[api.ReviewQueueItem(
            run_id=e.run_id, brand_id=e.brand_id,
            brand_name=page.brand_names.get(e.brand_id, e.brand_id),
            kind=api.ReviewKind(e.kind), engine=e.engine, since=e.since,
            age_s=max(0, int((now - e.since).total_seconds())), reason=e.reason)
            for e in page.entries],
        next_cursor=page.next_cursor, pending=c.pending, oldest_pending_at=c.oldest_pending_at,
        oldest_pending_age_s=(None if c.oldest_pending_at is None
                              else max(0, int((now - c.oldest_pending_at).total_seconds()))),
        sample_open=c.sample_open, sample_share=page.sample_share)


def review_item(i: ReviewItem) -> api.ReviewItem:
    r, b, judge = i.run, i.brand, i.judge
    return api.ReviewItem(
        run_id=r.run_id, brand_id=b.brand_id, kind=api.ReviewKind(i.kind),
        since=i.state.updated_at, brand_name=b.name, aliases=list(b.aliases),
        domains=list(b.domains), engine=r.engine, model=r.model, prompt=r.prompt,
        answer=r.answer, answer_sha256=r.answer_sha256, answered_at=r.answered_at,
        answer_segments=[api.AnswerSegment(text=t, mention=k) for t, k in i.segments],
        ground_truth_hash=i.ground_truth_hash, facts=[fact(f) for f in i.facts],
        judge=None if judge is None else api.JudgeOutput(
            state=api.JudgeState(judge.state), reason=judge.reason, attempts=judge.attempts,
            judge_model=judge.judge_model,
            claims=[api.JudgeClaimView(claim=c.claim, verdict=c.verdict, reason=c.reason,
                                       fact_ids=list(c.fact_ids)) for c in judge.claims]),
        classification_id=(str(i.state.classification_id)
                           if i.kind == "sample" and i.state.classification_id else None))


def review_decision(run_id: str, brand_id: str, d: Decided) -> api.ReviewDecisionResult:
    return api.ReviewDecisionResult(
        run_id=run_id, brand_id=brand_id, kind=api.ReviewKind(d.kind),
        citation_class=CitationClass(d.citation_class), reviewer=d.reviewer, note=d.note,
        reviewed_at=d.reviewed_at,
        classification=classification(d.label) if d.label else None,
        review_id=str(d.review.review_id) if d.review else None)


def rate(p: Proportion) -> api.Rate:
    return api.Rate(value=p.value, successes=p.successes, n=p.n, ci95_low=p.low, ci95_high=p.high)


def agreement(report: AgreementReport, judge_model: str | None) -> api.JudgeAgreement:
    a = report.agreement
    return api.JudgeAgreement(
        n=a.n, observed=rate(a.observed), kappa=a.kappa,
        per_class=[api.ClassAgreement(citation_class=CitationClass(c.citation_class),
                                      judge_n=c.judge_n, human_n=c.human_n, agreed=c.agreed,
                                      precision=rate(c.precision)) for c in a.per_class],
        confusion=a.confusion, judge_model=judge_model, sample_share=report.sample_share)


def metrics(query: GetMetrics, report: MetricsReport) -> schemas.MetricsResponse:
    """``GET /v1/metrics`` and its JSON export: the rows, the totals over the window, the
    segment asked for and the minimum sample of a powered cell."""
    return schemas.MetricsResponse(
        period=api.Period(query.period), **{"from": query.from_}, to=query.to,
        group_by=[api.MetricsDimension(d) for d in query.group_by],
        rows=[schemas.MetricRow(**r) for r in report.rows],
        segment=schemas.MetricsSegment(engine=query.engine, topic=query.topic,
                                       persona=query.persona, funnel=query.funnel,
                                       branded=query.branded, source=query.source,
                                       include_chats=query.include_chats,
                                       collection_method=query.collection_method),
        minimum=api.MinimumSample(n=report.min_n, prompts=report.min_prompts),
        totals=[schemas.MetricRow(**r) for r in report.totals],
        segment_values=report.segment_values,
        build_changes=[schemas.BuildChange(**c) for c in report.build_changes])
