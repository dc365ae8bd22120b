"""The classifier's alert routes (issue #25): rules, channels, fired alerts and their delivery
log. Routes are adapters onto the bus, like ``entrypoints/http.py``'s; this router is included
by ``create_app``, whose ``HTTP_ERRORS`` table maps the domain's errors (a refused webhook URL is
``Invalid``: 422 with the outbound policy's reason)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from attesta_classifier.domain import alert_commands as a
from attesta_classifier.entrypoints.deps import Bus, Ws
from attesta_classifier.service_layer.unit_of_work import (
    StoredAlert, StoredChannel, StoredDelivery, StoredRule)
from attesta_contracts.api import alerts as api
from attesta_platform.http import ErrorResponse

router = APIRouter(tags=["alerts"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorResponse, "description": "not found in this workspace"}}


# -- views ------------------------------------------------------------------------------------
def rule_view(r: StoredRule) -> api.AlertRule:
    return api.AlertRule(rule_id=r.rule_id, brand_id=r.brand_id, metric=api.AlertMetric(r.metric),
                         name=r.name, segment=api.AlertSegment(**r.segment),
                         direction=api.AlertDirection(r.direction), min_n=r.min_n,
                         min_prompts=r.min_prompts, alpha=r.alpha, muted=r.muted,
                         created_at=r.created_at, updated_at=r.updated_at)


def channel_view(ch: StoredChannel) -> api.AlertChannel:
    return api.AlertChannel(channel_id=ch.channel_id, kind=api.ChannelKind(ch.kind),
                            target=ch.target, name=ch.name, created_at=ch.created_at)


def _figures(period: dict[str, Any]) -> api.PeriodFigures:
    return api.PeriodFigures(**{k: period.get(k) for k in api.PeriodFigures.model_fields})


def alert_view(al: StoredAlert) -> dict[str, Any]:
    return {"alert_id": al.alert_id, "rule_id": al.rule_id, "test": al.test,
            "brand_id": al.brand_id, "metric": al.metric,
            "segment": api.AlertSegment(**al.segment), "direction": al.direction,
            "period_start": al.period_start, "previous_period_start": al.previous_period_start,
            "before": _figures(al.before), "after": _figures(al.after), "change": al.change,
            "p_value": al.p_value, "p_adjusted": al.p_adjusted, "correction": al.correction,
            "family_size": al.family_size, "runs": api.AlertRuns(**al.run_ids),
            "raised_at": al.raised_at}


def delivery_view(d: StoredDelivery) -> api.DeliveryView:
    return api.DeliveryView(
        delivery_id=d.delivery_id, channel_id=d.channel_id, kind=api.ChannelKind(d.kind),
        status=api.DeliveryStatus(d.status), attempts=d.attempts, last_error=d.last_error,
        next_attempt_at=d.next_attempt_at if d.status in ("pending", "failed") else None,
        created_at=d.created_at, updated_at=d.updated_at, delivered_at=d.delivered_at)


# -- rules ------------------------------------------------------------------------------------
@router.post("/v1/alerts/rules", status_code=201, response_model=api.AlertRule)
async def create_rule(body: api.AlertRuleCreate, ws: Ws, bus: Bus) -> api.AlertRule:
    return rule_view(await bus.handle(a.CreateAlertRule(
        ws, body.brand_id, body.metric.value, body.name,
        body.segment.model_dump(exclude_none=True), body.direction.value, body.min_n,
        body.min_prompts, body.alpha, body.muted)))


@router.get("/v1/alerts/rules", response_model=api.AlertRuleList)
async def list_rules(ws: Ws, bus: Bus) -> api.AlertRuleList:
    return api.AlertRuleList(items=[rule_view(r) for r in await bus.handle(a.ListAlertRules(ws))])


@router.get("/v1/alerts/rules/{rule_id}", response_model=api.AlertRule, responses=NOT_FOUND)
async def get_rule(rule_id: uuid.UUID, ws: Ws, bus: Bus) -> api.AlertRule:
    return rule_view(await bus.handle(a.GetAlertRule(ws, rule_id)))


@router.patch("/v1/alerts/rules/{rule_id}", response_model=api.AlertRule, responses=NOT_FOUND)
async def update_rule(rule_id: uuid.UUID, body: api.AlertRuleUpdate, ws: Ws,
                      bus: Bus) -> api.AlertRule:
    changes = body.model_dump(exclude_unset=True, mode="json")
    changes = {k: v for k, v in changes.items() if v is not None}
    if "segment" in changes:
        changes["segment"] = {k: v for k, v in changes["segment"].items() if v is not None}
    return rule_view(await bus.handle(a.UpdateAlertRule(ws, rule_id, changes)))


@router.delete("/v1/alerts/rules/{rule_id}", status_code=204, response_class=Response,
               responses=NOT_FOUND)
async def delete_rule(rule_id: uuid.UUID, ws: Ws, bus: Bus) -> Response:
    await bus.handle(a.DeleteAlertRule(ws, rule_id))
    return Response(status_code=204)


@router.post("/v1/alerts/rules/{rule_id}/test", status_code=202,
             response_model=api.TestAlertResult, responses=NOT_FOUND)
async def send_test_alert(rule_id: uuid.UUID, ws: Ws, bus: Bus) -> api.TestAlertResult:
    alert_id, deliveries = await bus.handle(a.SendTestAlert(ws, rule_id))
    return api.TestAlertResult(alert_id=alert_id, deliveries=deliveries)


# -- channels ---------------------------------------------------------------------------------
@router.post("/v1/alerts/channels", status_code=201, response_model=api.AlertChannelCreated,
             responses={422: {"model": ErrorResponse,
                              "description": "invalid, or the URL was refused by the outbound "
                                             "policy (the reason says why)"}})
async def create_channel(body: api.AlertChannelCreate, ws: Ws,
                         bus: Bus) -> api.AlertChannelCreated:
    created = await bus.handle(a.CreateAlertChannel(ws, body.kind.value, body.target, body.name))
    ch = created.channel
    return api.AlertChannelCreated(**channel_view(ch).model_dump(), secret=ch.secret)


@router.get("/v1/alerts/channels", response_model=api.AlertChannelList)
async def list_channels(ws: Ws, bus: Bus) -> api.AlertChannelList:
    return api.AlertChannelList(
        items=[channel_view(ch) for ch in await bus.handle(a.ListAlertChannels(ws))])


@router.delete("/v1/alerts/channels/{channel_id}", status_code=204, response_class=Response,
               responses=NOT_FOUND)
async def delete_channel(channel_id: uuid.UUID, ws: Ws, bus: Bus) -> Response:
    await bus.handle(a.DeleteAlertChannel(ws, channel_id))
    return Response(status_code=204)


# -- fired alerts -----------------------------------------------------------------------------
@router.get("/v1/alerts", response_model=api.AlertList)
async def list_alerts(ws: Ws, bus: Bus,
                      limit: Annotated[int, Query(ge=1, le=200)] = 50,
                      cursor: Annotated[str | None, Query(max_length=500)] = None
                      ) -> api.AlertList:
    items, next_cursor = await bus.handle(a.ListAlerts(ws, limit, cursor))
    return api.AlertList(items=[api.AlertView(**alert_view(al)) for al in items],
                         next_cursor=next_cursor)


@router.get("/v1/alerts/{alert_id}", response_model=api.AlertDetail, responses=NOT_FOUND)
async def get_alert(alert_id: uuid.UUID, ws: Ws, bus: Bus) -> api.AlertDetail:
    alert, deliveries = await bus.handle(a.GetAlert(ws, alert_id))
    return api.AlertDetail(**alert_view(alert),
                           deliveries=[delivery_view(d) for d in deliveries])
