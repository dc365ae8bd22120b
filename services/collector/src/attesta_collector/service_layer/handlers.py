"""Everything the collector can be asked to do: one handler per command or query.

A handler takes the message and its dependencies by parameter name (``uow``: a fresh unit of
work per message; ``brands``: the classifier's brand directory; ``engine_checks``: the outbound
policy and operator keys an engine is checked against; ``sealer``: seals a secret's value;
``topics``: where collections publish); ``bootstrap.py`` binds them once. The use cases live in
``catalog``, ``planning`` and ``collecting`` with their own signatures (tests and the benchmark
call them directly); the handlers below adapt them to the messages.
"""

from __future__ import annotations

from typing import Any

from attesta_collector.domain import commands as c
from attesta_collector.domain.sources import label_source
from attesta_collector.service_layer import catalog, planning
from attesta_collector.service_layer.collecting import (
    CollectorTopics,
    expire_assistant_requests,
    on_assistant_answer,
)
from attesta_collector.service_layer.errors import NotFound
from attesta_collector.service_layer.unit_of_work import (
    BrandDirectory,
    EngineChecks,
    Row,
    Rows,
    Sealer,
    UnitOfWork,
)
from attesta_platform.bus import Handler, Message


# -- prompts -----------------------------------------------------------------------------------
async def create_prompt(cmd: c.CreatePrompt, uow: UnitOfWork, brands: BrandDirectory) -> Row:
    return await catalog.create_prompt(uow, brands, cmd.ws, cmd.spec)


async def list_prompts(q: c.ListPrompts, uow: UnitOfWork) -> Rows:
    return await catalog.list_prompts(uow, q.ws, prompt_set=q.prompt_set, branded=q.branded,
                                      tag=q.tag, include_retired=q.include_retired,
                                      limit=q.limit, after=q.after)


async def get_prompt(q: c.GetPrompt, uow: UnitOfWork) -> Row:
    return await catalog.get_prompt(uow, q.ws, q.prompt_id)


async def update_prompt(cmd: c.UpdatePrompt, uow: UnitOfWork, brands: BrandDirectory) -> Row:
    return await catalog.update_prompt(uow, brands, cmd.ws, cmd.prompt_id, cmd.change)


async def retire_prompt(cmd: c.RetirePrompt, uow: UnitOfWork) -> Row:
    return await catalog.retire_prompt(uow, cmd.ws, cmd.prompt_id)


async def import_prompts(cmd: c.ImportPrompts, uow: UnitOfWork,
                         brands: BrandDirectory) -> c.ImportReport:
    return await catalog.import_prompts(uow, brands, cmd.ws, cmd.fmt, cmd.content)


# -- engines -----------------------------------------------------------------------------------
async def create_engine(cmd: c.CreateEngine, uow: UnitOfWork, engine_checks: EngineChecks) -> Row:
    return await catalog.create_engine(uow, engine_checks, cmd.ws, cmd.spec)


async def list_engines(q: c.ListEngines, uow: UnitOfWork) -> Rows:
    return await catalog.list_engines(uow, q.ws)


async def replace_engine(cmd: c.ReplaceEngine, uow: UnitOfWork,
                         engine_checks: EngineChecks) -> Row:
    return await catalog.replace_engine(uow, engine_checks, cmd.ws, cmd.engine_id, cmd.spec)


async def retire_engine(cmd: c.RetireEngine, uow: UnitOfWork) -> Row:
    return await catalog.retire_engine(uow, cmd.ws, cmd.engine_id)


# -- engine secrets ----------------------------------------------------------------------------
async def create_secret(cmd: c.CreateSecret, uow: UnitOfWork, sealer: Sealer) -> Row:
    return await catalog.create_secret(uow, sealer, cmd.ws, cmd.spec)


async def list_secrets(q: c.ListSecrets, uow: UnitOfWork) -> Rows:
    return await catalog.list_secrets(uow, q.ws, q.include_retired)


async def retire_secret(cmd: c.RetireSecret, uow: UnitOfWork) -> Row:
    return await catalog.retire_secret(uow, cmd.ws, cmd.secret_id)


# -- schedules and planning --------------------------------------------------------------------
async def create_schedule(cmd: c.CreateSchedule, uow: UnitOfWork) -> Row:
    return await catalog.create_schedule(uow, cmd.ws, cmd.spec)


async def list_schedules(q: c.ListSchedules, uow: UnitOfWork) -> Rows:
    return await catalog.list_schedules(uow, q.ws)


async def replace_schedule(cmd: c.ReplaceSchedule, uow: UnitOfWork) -> Row:
    return await catalog.replace_schedule(uow, cmd.ws, cmd.schedule_id, cmd.spec)


async def retire_schedule(cmd: c.RetireSchedule, uow: UnitOfWork) -> Row:
    return await catalog.retire_schedule(uow, cmd.ws, cmd.schedule_id)


async def plan_slot_now(cmd: c.PlanSlotNow, uow: UnitOfWork) -> tuple[Any, int]:
    return await planning.plan_now(uow, cmd.ws, cmd.schedule_id, cmd.slot)


async def plan_due(cmd: c.PlanDue, uow: UnitOfWork) -> int:
    return await planning.plan_due(uow)


# -- collections -------------------------------------------------------------------------------
async def list_collections(q: c.ListCollections, uow: UnitOfWork,
                           brands: BrandDirectory) -> Rows:
    rows = await catalog.list_collections(uow, q.ws, schedule_id=q.schedule_id, status=q.status,
                                          slot=q.slot, limit=q.limit, after=q.after)
    if q.brand_id is None:
        return rows
    tracked = {b.brand_id: b for b in await brands.brands(q.ws)}
    if q.brand_id not in tracked:
        raise NotFound("not_found", f"no tracked brand {q.brand_id}")
    brand = tracked[q.brand_id]
    return [{**r, "sources": [
        {**s, "label": label_source(s.get("host") or s["domain"], brand, tracked).value}
        for s in r["sources"] or []]} for r in rows]


async def get_collection(q: c.GetCollection, uow: UnitOfWork) -> Row:
    return await catalog.get_collection(uow, q.ws, q.collection_id)


async def get_raw_response(q: c.GetRawResponse, uow: UnitOfWork) -> tuple[str, bytes]:
    return await catalog.raw_response(uow, q.ws, q.collection_id)


async def get_slot_progress(q: c.GetSlotProgress, uow: UnitOfWork) -> dict[str, int]:
    return await catalog.slot_progress(uow, q.ws, q.schedule_id, q.slot)


# -- our assistant -----------------------------------------------------------------------------
async def link_assistant_answer(cmd: c.LinkAssistantAnswer, uow: UnitOfWork,
                                topics: CollectorTopics) -> str | None:
    return await on_assistant_answer(uow, topics, cmd.answer)


async def expire_requests(cmd: c.ExpireAssistantRequests, uow: UnitOfWork,
                          topics: CollectorTopics) -> int:
    return await expire_assistant_requests(uow, topics, cmd.timeout_s)


HANDLERS: dict[type[Message[Any]], Handler] = {
    c.CreatePrompt: create_prompt,
    c.ListPrompts: list_prompts,
    c.GetPrompt: get_prompt,
    c.UpdatePrompt: update_prompt,
    c.RetirePrompt: retire_prompt,
    c.ImportPrompts: import_prompts,
    c.CreateEngine: create_engine,
    c.ListEngines: list_engines,
    c.ReplaceEngine: replace_engine,
    c.RetireEngine: retire_engine,
    c.CreateSecret: create_secret,
    c.ListSecrets: list_secrets,
    c.RetireSecret: retire_secret,
    c.CreateSchedule: create_schedule,
    c.ListSchedules: list_schedules,
    c.ReplaceSchedule: replace_schedule,
    c.RetireSchedule: retire_schedule,
    c.PlanSlotNow: plan_slot_now,
    c.PlanDue: plan_due,
    c.ListCollections: list_collections,
    c.GetCollection: get_collection,
    c.GetRawResponse: get_raw_response,
    c.GetSlotProgress: get_slot_progress,
    c.LinkAssistantAnswer: link_assistant_answer,
    c.ExpireAssistantRequests: expire_requests,
}
