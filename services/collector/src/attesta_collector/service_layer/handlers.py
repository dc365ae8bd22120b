"""Everything the collector can be asked to do: one handler per command or query.

A handler takes the message and its dependencies by parameter name (``uow``: a fresh unit of
work per message; ``brands``: the classifier's brand directory; ``engine_checks``: the outbound
policy and operator keys an engine is checked against; ``sealer``: seals a secret's value;
``topics``: where collections publish); ``bootstrap.py`` binds them once. The handlers are the
use cases themselves and live with what they work on: ``catalog`` (prompts, engines, secrets,
schedules and the reads of collections), ``planning`` (slots) and ``collecting`` (our
assistant's replies). The collection workers (``collecting.Collector``) are a loop of their own.
"""

from __future__ import annotations

from typing import Any

from attesta_collector.domain import commands as c
from attesta_collector.service_layer import catalog, collecting, planning
from attesta_platform.bus import Handler, Message

HANDLERS: dict[type[Message[Any]], Handler] = {
    c.CreatePrompt: catalog.create_prompt,
    c.ListPrompts: catalog.list_prompts,
    c.GetPrompt: catalog.get_prompt,
    c.UpdatePrompt: catalog.update_prompt,
    c.RetirePrompt: catalog.retire_prompt,
    c.ImportPrompts: catalog.import_prompts,
    c.CreateEngine: catalog.create_engine,
    c.ListEngines: catalog.list_engines,
    c.ReplaceEngine: catalog.replace_engine,
    c.RetireEngine: catalog.retire_engine,
    c.CreateSecret: catalog.create_secret,
    c.ListSecrets: catalog.list_secrets,
    c.RetireSecret: catalog.retire_secret,
    c.CreateSchedule: catalog.create_schedule,
    c.ListSchedules: catalog.list_schedules,
    c.ReplaceSchedule: catalog.replace_schedule,
    c.RetireSchedule: catalog.retire_schedule,
    c.PlanSlotNow: planning.plan_slot_now,
    c.PlanDue: planning.plan_due,
    c.CompleteSlots: planning.complete_slots,
    c.ListCollections: catalog.list_collections,
    c.GetCollection: catalog.get_collection,
    c.GetRawResponse: catalog.get_raw_response,
    c.GetSlotProgress: catalog.get_slot_progress,
    c.LinkAssistantAnswer: collecting.link_assistant_answer,
    c.ExpireAssistantRequests: collecting.expire_assistant_requests,
}
