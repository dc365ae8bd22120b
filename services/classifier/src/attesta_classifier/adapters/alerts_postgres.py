"""The alert tables on PostgreSQL (migration 0004): rules, channels, evaluations, fired alerts
and their deliveries; the looks at each (rule, week) and the alpha they spent (0010,
``PostgresLooks``); and the classifier's unit of work with them bound (``AlertingUnitOfWork``,
what ``bootstrap.py`` builds), so an alert, its deliveries and its event commit together.

Claims of deliveries are row state, not held locks: ``claim_deliveries`` moves due rows to
``sending`` with a lease (``FOR UPDATE SKIP LOCKED`` so two workers never take the same row)
and commits before anything is sent; ``finish_delivery`` records the outcome only if that claim
still holds (its attempt number), so a worker whose lease lapsed cannot overwrite a newer one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import asyncpg
import orjson

from attesta_classifier.adapters.postgres import ClassifierUnitOfWork
from attesta_classifier.domain.alerts import Spending
from attesta_classifier.service_layer.alerting import LookRecord
from attesta_classifier.service_layer.unit_of_work import (
    AlertRepository, ClaimedDelivery, RunLink, StoredAlert, StoredChannel, StoredDelivery,
    StoredRule)

RULE_COLUMNS = ("rule_id, workspace_id, brand_id, metric, name, segment, direction, min_n, "
                "min_prompts, alpha, muted, created_at, updated_at")
CHANNEL_COLUMNS = "channel_id, workspace_id, kind, target, name, secret, created_at"
ALERT_COLUMNS = ("alert_id, workspace_id, rule_id, test, brand_id, metric, segment, direction, "
                 "period_start, previous_period_start, before, after, change, p_value, "
                 "p_adjusted, correction, family_size, run_ids, raised_at")
DELIVERY_COLUMNS = ("d.delivery_id, d.alert_id, d.channel_id, d.workspace_id, c.kind, d.status, "
                    "d.attempts, d.last_error, d.next_attempt_at, d.created_at, d.updated_at, "
                    "d.delivered_at")
RULE_FIELDS = frozenset({"name", "segment", "direction", "min_n", "min_prompts", "alpha",
                         "muted"})
RUN_LINKS_MAX = 2000


class AlertingUnitOfWork(ClassifierUnitOfWork):
    alerts: AlertRepository
    looks: PostgresLooks

    def bind(self, conn: asyncpg.Connection) -> None:
        super().bind(conn)
        self.alerts = PostgresAlerts(conn)
        self.looks = PostgresLooks(conn)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _loads(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, (str, bytes)) else value


def _rule(r: asyncpg.Record) -> StoredRule:
    return StoredRule(**{**dict(r), "segment": _loads(r["segment"])})


def _channel(r: asyncpg.Record) -> StoredChannel:
    return StoredChannel(**dict(r))


def _alert(r: asyncpg.Record) -> StoredAlert:
    return StoredAlert(**{**dict(r), **{k: _loads(r[k]) for k in
                                        ("segment", "before", "after", "run_ids")}})


def _delivery(r: asyncpg.Record) -> StoredDelivery:
    return StoredDelivery(**{k: r[k] for k in StoredDelivery.__dataclass_fields__})


class PostgresAlerts:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    # -- rules --------------------------------------------------------------------------------
    async def add_rule(self, rule: StoredRule) -> None:
        await self.conn.execute(
            f"INSERT INTO alert_rules ({RULE_COLUMNS}) "
            "VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, $12, $13)",
            rule.rule_id, rule.workspace_id, rule.brand_id, rule.metric, rule.name,
            _json(rule.segment), rule.direction, rule.min_n, rule.min_prompts, rule.alpha,
            rule.muted, rule.created_at, rule.updated_at)

    async def get_rule(self, workspace_id: str, rule_id: uuid.UUID) -> StoredRule | None:
        row = await self.conn.fetchrow(
            f"SELECT {RULE_COLUMNS} FROM alert_rules "
            "WHERE workspace_id = $1 AND rule_id = $2 AND deleted_at IS NULL",
            workspace_id, rule_id)
        return None if row is None else _rule(row)

    async def rules(self, workspace_id: str) -> list[StoredRule]:
        rows = await self.conn.fetch(
            f"SELECT {RULE_COLUMNS} FROM alert_rules WHERE workspace_id = $1 "
            "AND deleted_at IS NULL ORDER BY created_at, rule_id", workspace_id)
        return [_rule(r) for r in rows]

    async def update_rule(self, workspace_id: str, rule_id: uuid.UUID,
                          changes: dict[str, Any]) -> StoredRule | None:
        unknown = set(changes) - RULE_FIELDS
        if unknown:
            raise ValueError(f"not a rule field: {sorted(unknown)}")
        names = sorted(changes)
        sets = ", ".join(f"{n} = ${i + 3}{'::jsonb' if n == 'segment' else ''}"
                         for i, n in enumerate(names))
        values = [_json(changes[n]) if n == "segment" else changes[n] for n in names]
        row = await self.conn.fetchrow(
            f"UPDATE alert_rules SET {sets}{', ' if sets else ''}updated_at = now() "
            "WHERE workspace_id = $1 AND rule_id = $2 AND deleted_at IS NULL "
            f"RETURNING {RULE_COLUMNS}", workspace_id, rule_id, *values)
        return None if row is None else _rule(row)

    async def delete_rule(self, workspace_id: str, rule_id: uuid.UUID) -> bool:
        done = await self.conn.execute(
            "UPDATE alert_rules SET deleted_at = now(), updated_at = now() "
            "WHERE workspace_id = $1 AND rule_id = $2 AND deleted_at IS NULL",
            workspace_id, rule_id)
        return bool(done.endswith(" 1"))

    # -- channels -----------------------------------------------------------------------------
    async def add_channel(self, channel: StoredChannel) -> None:
        await self.conn.execute(
            f"INSERT INTO alert_channels ({CHANNEL_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            channel.channel_id, channel.workspace_id, channel.kind, channel.target, channel.name,
            channel.secret, channel.created_at)

    async def channels(self, workspace_id: str) -> list[StoredChannel]:
        rows = await self.conn.fetch(
            f"SELECT {CHANNEL_COLUMNS} FROM alert_channels WHERE workspace_id = $1 "
            "AND deleted_at IS NULL ORDER BY created_at, channel_id", workspace_id)
        return [_channel(r) for r in rows]

    async def delete_channel(self, workspace_id: str, channel_id: uuid.UUID) -> bool:
        done = await self.conn.execute(
            "UPDATE alert_channels SET deleted_at = now() "
            "WHERE workspace_id = $1 AND channel_id = $2 AND deleted_at IS NULL",
            workspace_id, channel_id)
        return bool(done.endswith(" 1"))

    # -- evaluation ---------------------------------------------------------------------------
    async def workspaces_with_rules(self) -> list[str]:
        rows = await self.conn.fetch(
            "SELECT DISTINCT workspace_id FROM alert_rules "
            "WHERE deleted_at IS NULL AND NOT muted ORDER BY 1")
        return [r["workspace_id"] for r in rows]

    async def evaluated(self, workspace_id: str, period_start: datetime) -> bool:
        return bool(await self.conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM alert_evaluations "
            "WHERE workspace_id = $1 AND period_start = $2)", workspace_id, period_start))

    async def record_evaluation(self, workspace_id: str, period_start: datetime, rules: int,
                                fired: int) -> bool:
        done = await self.conn.execute(
            "INSERT INTO alert_evaluations (workspace_id, period_start, rules, fired) "
            "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            workspace_id, period_start, rules, fired)
        return bool(done.endswith(" 1"))

    async def run_links(self, workspace_id: str, brand_id: str, start: datetime,
                        end: datetime) -> list[RunLink]:
        rows = await self.conn.fetch(
            "SELECT r.run_id, r.engine, r.prompt, r.collection_method, "
            "  array_remove(ARRAY[r.prompt_context->>'topic', r.prompt_context->>'persona', "
            "                     r.prompt_context->>'funnel'], NULL) AS tags "
            "FROM run_brand_status s JOIN runs r ON r.run_id = s.run_id "
            "WHERE s.workspace_id = $1 AND s.brand_id = $2 AND s.status = 'classified' "
            "  AND coalesce(r.answered_at, r.recorded_at) >= $3 "
            "  AND coalesce(r.answered_at, r.recorded_at) < $4 "
            "ORDER BY coalesce(r.answered_at, r.recorded_at) DESC, r.run_id DESC LIMIT $5",
            workspace_id, brand_id, start, end, RUN_LINKS_MAX)
        return [RunLink(r["run_id"], r["engine"], r["prompt"], tuple(r["tags"]),
                        r["collection_method"]) for r in rows]

    # -- alerts and deliveries ----------------------------------------------------------------
    async def add_alert(self, alert: StoredAlert, channel_ids: Sequence[uuid.UUID]) -> bool:
        # A fired alert is once per (rule, period): the partial unique index alerts_rule_period
        # (a weekly close after a slot's alert of that week, or two slots of one week).
        done = await self.conn.execute(
            f"INSERT INTO alerts ({ALERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, "
            "$9, $10, $11::jsonb, $12::jsonb, $13, $14, $15, $16, $17, $18::jsonb, $19) "
            "ON CONFLICT (rule_id, period_start) WHERE NOT test DO NOTHING",
            alert.alert_id, alert.workspace_id, alert.rule_id, alert.test, alert.brand_id,
            alert.metric, _json(alert.segment), alert.direction, alert.period_start,
            alert.previous_period_start, _json(alert.before), _json(alert.after), alert.change,
            alert.p_value, alert.p_adjusted, alert.correction, alert.family_size,
            _json(alert.run_ids), alert.raised_at)
        if not done.endswith(" 1"):
            return False
        if channel_ids:
            await self.conn.execute(
                "INSERT INTO alert_deliveries (delivery_id, alert_id, channel_id, workspace_id, "
                "  status) "
                "SELECT gen_random_uuid(), $1, c, $2, 'pending' FROM unnest($3::uuid[]) c",
                alert.alert_id, alert.workspace_id, list(channel_ids))
        return True

    async def slot_evaluated(self, workspace_id: str, schedule_id: str, slot: datetime) -> bool:
        return bool(await self.conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM alert_slot_evaluations "
            "WHERE workspace_id = $1 AND schedule_id = $2 AND slot = $3)",
            workspace_id, schedule_id, slot))

    async def record_slot_evaluation(self, workspace_id: str, schedule_id: str, slot: datetime,
                                     period_start: datetime, runs: int, rules: int,
                                     fired: int) -> bool:
        done = await self.conn.execute(
            "INSERT INTO alert_slot_evaluations (workspace_id, schedule_id, slot, period_start, "
            "runs, rules, fired) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            workspace_id, schedule_id, slot, period_start, runs, rules, fired)
        return bool(done.endswith(" 1"))

    async def recorded_runs(self, workspace_id: str, run_ids: Sequence[str]) -> int:
        return int(await self.conn.fetchval(
            "SELECT count(*) FROM runs WHERE workspace_id = $1 AND run_id = ANY($2::text[])",
            workspace_id, list(run_ids)))

    async def get_alert(self, workspace_id: str, alert_id: uuid.UUID) -> StoredAlert | None:
        row = await self.conn.fetchrow(
            f"SELECT {ALERT_COLUMNS} FROM alerts WHERE workspace_id = $1 AND alert_id = $2",
            workspace_id, alert_id)
        return None if row is None else _alert(row)

    async def alerts(self, workspace_id: str, before: tuple[datetime, uuid.UUID] | None,
                     limit: int) -> list[StoredAlert]:
        rows = await self.conn.fetch(
            f"SELECT {ALERT_COLUMNS} FROM alerts WHERE workspace_id = $1 "
            "  AND ($2::timestamptz IS NULL OR (raised_at, alert_id) < ($2, $3::uuid)) "
            "ORDER BY raised_at DESC, alert_id DESC LIMIT $4",
            workspace_id, before[0] if before else None, before[1] if before else None, limit)
        return [_alert(r) for r in rows]

    async def deliveries(self, alert_id: uuid.UUID) -> list[StoredDelivery]:
        rows = await self.conn.fetch(
            f"SELECT {DELIVERY_COLUMNS} FROM alert_deliveries d "
            "JOIN alert_channels c ON c.channel_id = d.channel_id "
            "WHERE d.alert_id = $1 ORDER BY d.created_at, d.delivery_id", alert_id)
        return [_delivery(r) for r in rows]

    async def claim_deliveries(self, limit: int, lease_s: float) -> list[ClaimedDelivery]:
        claimed = await self.conn.fetch(
            "WITH due AS ("
            "  SELECT delivery_id FROM alert_deliveries "
            "  WHERE (status IN ('pending', 'failed') AND next_attempt_at <= now()) "
            "     OR (status = 'sending' AND claimed_until < now()) "
            "  ORDER BY next_attempt_at, delivery_id LIMIT $1 FOR UPDATE SKIP LOCKED) "
            "UPDATE alert_deliveries d SET status = 'sending', attempts = d.attempts + 1, "
            "  claimed_until = now() + make_interval(secs => $2), updated_at = now() "
            "FROM due WHERE d.delivery_id = due.delivery_id RETURNING d.delivery_id",
            limit, lease_s)
        if not claimed:
            return []
        rows = await self.conn.fetch(
            f"SELECT {DELIVERY_COLUMNS}, "
            + ", ".join(f"c.{col.strip()} AS c_{col.strip()}" for col in CHANNEL_COLUMNS.split(","))
            + ", " + ", ".join(f"a.{col.strip()} AS a_{col.strip()}"
                               for col in ALERT_COLUMNS.split(","))
            + " FROM alert_deliveries d JOIN alert_channels c ON c.channel_id = d.channel_id "
            "JOIN alerts a ON a.alert_id = d.alert_id WHERE d.delivery_id = ANY($1::uuid[]) "
            "ORDER BY d.next_attempt_at, d.delivery_id",
            [r["delivery_id"] for r in claimed])
        out = []
        for r in rows:
            channel = {k[2:]: v for k, v in r.items() if k.startswith("c_")}
            alert = {k[2:]: v for k, v in r.items() if k.startswith("a_")}
            out.append(ClaimedDelivery(_delivery(r), StoredChannel(**channel), StoredAlert(
                **{**alert, **{k: _loads(alert[k]) for k in
                               ("segment", "before", "after", "run_ids")}})))
        return out

    async def finish_delivery(self, delivery_id: uuid.UUID, attempt: int, status: str,
                              error: str | None, receipt: str | None,
                              next_attempt_at: datetime | None) -> bool:
        done = await self.conn.execute(
            "UPDATE alert_deliveries SET status = $3, last_error = $4, receipt = $5, "
            "  next_attempt_at = coalesce($6, next_attempt_at), claimed_until = NULL, "
            "  updated_at = now(), "
            "  delivered_at = CASE WHEN $3 = 'delivered' THEN now() ELSE delivered_at END "
            "WHERE delivery_id = $1 AND attempts = $2 AND status = 'sending'",
            delivery_id, attempt, status, None if error is None else error[:2000],
            None if receipt is None else receipt[:2000], next_attempt_at)
        return bool(done.endswith(" 1"))


class PostgresLooks:
    """The looks at each (rule, week) (``alert_looks``, append-only): the alpha they spent."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def lock(self, workspace_id: str) -> None:
        # A transaction lock, released by the commit or rollback that ends the unit of work: two
        # evaluations of one workspace (two schedules' slots, a slot and the weekly close) read
        # and spend a rule's alpha one after the other, never both from the same state.
        await self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                                f"attesta:alert-looks:{workspace_id}")

    async def spending(self, period_start: datetime,
                       rules: Sequence[tuple[uuid.UUID, float]]) -> dict[uuid.UUID, Spending]:
        """Each rule's state in the week starting ``period_start`` (``rules``: (rule id, its
        alpha now)); a rule no look has tested yet has spent nothing."""
        rows = await self.conn.fetch(
            "SELECT rule_id, max(spent) AS spent, max(information) AS information, "
            "  bool_or(closing) AS closed, array_agg(look) AS looks "
            "FROM alert_looks WHERE period_start = $1 AND rule_id = ANY($2::uuid[]) "
            "GROUP BY rule_id", period_start, [r for r, _ in rules])
        seen = {r["rule_id"]: r for r in rows}
        out = {}
        for rule_id, alpha in rules:
            r = seen.get(rule_id)
            out[rule_id] = Spending(alpha) if r is None else Spending(
                alpha, r["spent"], r["information"], frozenset(r["looks"]), r["closed"])
        return out

    async def record(self, looks: Sequence[LookRecord]) -> None:
        if looks:
            await self.conn.executemany(
                "INSERT INTO alert_looks (rule_id, period_start, look, information, level, "
                "spent, closing, p_adjusted, fired) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
                "ON CONFLICT DO NOTHING",
                [(x.rule_id, x.period_start, x.look, x.information, x.level, x.spent, x.closing,
                  x.p_adjusted, x.fired) for x in looks])


def with_alerts(new_uow: Callable[[], Any]) -> Callable[[], Any]:
    """The factory ``new_uow`` with the alert tables bound: a PostgreSQL unit of work of the
    classifier becomes an ``AlertingUnitOfWork`` on the same pool (so every caller that builds
    the bus from ``ClassifierUnitOfWork`` gets the alert routes working); anything else (the
    in-memory fakes) is left as it is."""

    def make() -> Any:
        uow = new_uow()
        if isinstance(uow, ClassifierUnitOfWork) and not isinstance(uow, AlertingUnitOfWork):
            return AlertingUnitOfWork(uow.pool)
        return uow

    return make
