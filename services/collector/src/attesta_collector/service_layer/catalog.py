"""Prompts, engines, secrets and schedules of a workspace (create, list, change, retire, bulk
import) and the reads of collections: the handlers of those commands and queries
(``handlers.HANDLERS``), each taking its message and its dependencies by name.

Retiring sets ``retired_at``; nothing is deleted (the database refuses DELETE). A retired
prompt is no longer planned into new slots; its past collections and runs stay as they were.
"""

from __future__ import annotations

import csv
import io
import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import ValidationError

from attesta_collector.domain import commands as c
from attesta_collector.domain.keys import OPERATOR_KEY_UNUSABLE, SECRET_UNUSABLE
from attesta_collector.domain.model import (
    BrandNames,
    Cadence,
    EngineSpec,
    PromptSpec,
    ScheduleSpec,
    branded_brands,
    check_cron,
    prompt_key,
)
from attesta_collector.domain.sources import label_source
from attesta_collector.service_layer.errors import Conflict, Invalid, NotFound, ServiceError, TooLarge
from attesta_collector.service_layer.unit_of_work import (
    BrandDirectory,
    EngineChecks,
    Row,
    Rows,
    Sealer,
    UnitOfWork,
)
from attesta_contracts.api.collector import ImportResult, ImportRow


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


# --------------------------------------------------------------------------- prompts

async def _prompt_row(ws: str, spec: PromptSpec, brands: BrandDirectory,
                      known: list[BrandNames] | None = None) -> dict[str, Any]:
    tracked = known if known is not None else await brands.brands(ws)
    unknown = sorted(set(spec.brand_ids) - {b.brand_id for b in tracked})
    if unknown:
        raise Invalid("unknown_brand",
                      f"brand_ids not tracked in this workspace: {', '.join(unknown)}")
    named = branded_brands(spec.text, tracked)
    return {"workspace_id": ws, "prompt_set": spec.prompt_set, "text": spec.text,
            "locale": spec.locale, "tags": spec.tags.model_dump(exclude_none=True),
            "brand_ids": spec.brand_ids, "branded": bool(named), "branded_brand_ids": named,
            "prompt_key": prompt_key(spec)}


async def create_prompt(cmd: c.CreatePrompt, uow: UnitOfWork, brands: BrandDirectory) -> Row:
    row = await _prompt_row(cmd.ws, cmd.spec, brands)
    row["prompt_id"] = _new_id("pr")
    async with uow:
        created = await uow.prompts.add(row)
        if created is None:
            existing = await uow.prompts.by_key(cmd.ws, row["prompt_key"])
            raise Conflict("duplicate_prompt",
                           f"the same prompt (set, locale, text) exists: "
                           f"{existing['prompt_id'] if existing else '?'}")
        await uow.commit()
    return created


async def get_prompt(q: c.GetPrompt, uow: UnitOfWork) -> Row:
    async with uow.read():
        row = await uow.prompts.get(q.ws, q.prompt_id)
    if row is None:
        raise NotFound("not_found", f"no prompt {q.prompt_id}")
    return row


async def update_prompt(cmd: c.UpdatePrompt, uow: UnitOfWork, brands: BrandDirectory) -> Row:
    ws, prompt_id = cmd.ws, cmd.prompt_id
    async with uow:
        current = await uow.prompts.get(ws, prompt_id, for_update=True)
        if current is None:
            raise NotFound("not_found", f"no prompt {prompt_id}")
        if current["retired_at"] is not None:
            raise Conflict("retired", f"prompt {prompt_id} is retired")
        merged = {"prompt_set": current["prompt_set"], "text": current["text"],
                  "locale": current["locale"], "tags": current["tags"],
                  "brand_ids": list(current["brand_ids"])}
        merged.update(cmd.change.model_dump(exclude_unset=True, exclude_none=True))
        try:
            spec = PromptSpec.model_validate(merged)
        except ValidationError as exc:
            raise Invalid("invalid_request", str(exc.errors()[0]["msg"])) from None
        row = await _prompt_row(ws, spec, brands)
        updated = await uow.prompts.update(ws, prompt_id, row)
        if updated is None:
            raise Conflict("duplicate_prompt",
                           "another prompt has the same set, locale and text")
        await uow.commit()
    return updated


async def retire_prompt(cmd: c.RetirePrompt, uow: UnitOfWork) -> Row:
    async with uow:
        row = await uow.prompts.retire(cmd.ws, cmd.prompt_id)
        await uow.commit()
    if row is None:
        raise NotFound("not_found", f"no prompt {cmd.prompt_id}")
    return row


ParsedRows = list[tuple[int, dict[str, Any] | None, str | None]]

CSV_COLUMNS = ("text", "prompt_set", "locale", "topic", "persona", "funnel", "brand_ids")


def _rows_from(fmt: str, content: bytes) -> ParsedRows:
    """(line number, row as a dict or None, why it could not be read)."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Invalid("invalid_file", f"the file is not UTF-8: {exc}") from None
    if fmt == "csv":
        return _csv_rows(text)
    out: ParsedRows = []
    # Lines end at "\n" only: str.splitlines() also splits at U+2028 and other characters a
    # JSON string may hold as they are.
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            out.append((n, None, f"not JSON: {exc}"))
            continue
        out.append((n, obj, None) if isinstance(obj, dict) else (n, None, "not a JSON object"))
    return out


def _csv_rows(text: str) -> ParsedRows:
    """The rows of a CSV file, each numbered by the line it starts on.

    The parser is strict (a quote must close, nothing may follow a closing quote in a field)
    and nothing is guessed. A row it cannot read is refused when the report can still account
    for every line after it: a quote never closed runs to the end of the file, so that row is
    refused and names the lines it swallowed. Any other parse error (a field over the csv
    module's 131,072-character limit, text after a closing quote) leaves no way to tell where
    the next row starts, so the whole file is refused (422) with the line; nothing is imported.
    """
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)

    def next_record() -> tuple[int, list[str] | None]:
        start = reader.line_num + 1
        try:
            return start, next(reader, None)
        except csv.Error as exc:
            # The strict parser's one error at the end of the file: a quote never closed.
            if str(exc) == "unexpected end of data":
                raise _UnclosedQuote(start, reader.line_num) from None
            raise Invalid("invalid_csv", f"line {start}: {_csv_problem(exc)}; the "
                          "file cannot be read past it, so nothing was imported") from None

    try:
        _, header = next_record()
    except _UnclosedQuote as unclosed:
        raise Invalid("invalid_csv", f"line {unclosed.start}: the header has a "
                      "quote that is never closed") from None
    header = [h.strip() for h in header or []]
    if "text" not in header:
        raise Invalid("invalid_file", "the CSV header must name a `text` column")
    if dup := sorted({h for h in header if header.count(h) > 1}):
        raise Invalid("invalid_csv", f"line 1: the header names "
                      f"{', '.join(f'`{h}`' for h in dup)} more than once")
    if "" in header:
        raise Invalid("invalid_csv",
                      f"line 1: column {header.index('') + 1} of the header has no name")
    unknown = sorted(set(header) - set(CSV_COLUMNS))
    out: ParsedRows = []
    while True:
        try:
            n, record = next_record()
        except _UnclosedQuote as unclosed:
            out.append((unclosed.start, None,
                        f"a quoted field opened on line {unclosed.start} is never closed: lines "
                        f"{unclosed.start}-{unclosed.end} were not imported"))
            break
        if record is None:
            break
        if not record:
            continue  # a blank line
        if len(record) > len(header):
            out.append((n, None, "more fields than the header"))
            continue
        if unknown:
            out.append((n, None, f"unknown columns: {', '.join(unknown)}"))
            continue
        out.append((n, _prompt_fields(dict(zip(header, record, strict=False))), None))
    return out


class _UnclosedQuote(Exception):
    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end


def _csv_problem(exc: csv.Error) -> str:
    message = str(exc)
    if message.startswith("field larger than field limit"):
        return f"a field is longer than {csv.field_size_limit():,} characters"
    if message.startswith("',' expected after '\"'"):
        return "text after a closing quote (a quote inside a quoted field is written twice)"
    return f"not readable as CSV ({message})"


def _prompt_fields(record: dict[str, str]) -> dict[str, Any]:
    """A CSV row as a prompt spec's fields (empty cells are left out)."""
    row: dict[str, Any] = {"text": record.get("text") or ""}
    for col in ("prompt_set", "locale"):
        if record.get(col):
            row[col] = record[col]
    tags = {k: record[k] for k in ("topic", "persona", "funnel") if record.get(k)}
    if tags:
        row["tags"] = tags
    if record.get("brand_ids"):
        row["brand_ids"] = [b.strip() for b in record["brand_ids"].split(";") if b.strip()]
    return row


async def import_prompts(cmd: c.ImportPrompts, uow: UnitOfWork, brands: BrandDirectory,
                         max_rows: int = 10_000) -> ImportResult:
    """Each row accepted, unchanged (the same prompt exists) or refused with the reason."""
    ws = cmd.ws
    if cmd.fmt not in ("csv", "jsonl"):
        raise Invalid("invalid_format", "format must be csv or jsonl")
    rows = _rows_from(cmd.fmt, cmd.content)
    if len(rows) > max_rows:
        raise TooLarge("too_many_rows", f"{len(rows)} rows; at most {max_rows} per import")
    tracked = await brands.brands(ws)
    report: list[ImportRow] = []
    async with uow:  # one transaction: an import is stored whole or not at all
        for line, raw, problem in rows:
            if problem is None:
                try:
                    spec = PromptSpec.model_validate(raw)
                    row = await _prompt_row(ws, spec, brands, tracked)
                except ValidationError as exc:
                    e = exc.errors()[0]
                    problem = f"{'.'.join(str(p) for p in e['loc']) or 'row'}: {e['msg']}"
                except ServiceError as exc:
                    problem = exc.reason
            if problem is not None:
                report.append(ImportRow(line=line, outcome="refused", reason=problem))
                continue
            row["prompt_id"] = _new_id("pr")
            created = await uow.prompts.add(row)
            if created is None:
                existing = await uow.prompts.by_key(ws, row["prompt_key"])
                report.append(ImportRow(line=line, outcome="unchanged",
                                        prompt_id=existing["prompt_id"] if existing else None))
            else:
                report.append(ImportRow(line=line, outcome="accepted",
                                        prompt_id=created["prompt_id"]))
        await uow.commit()
    outcomes = Counter(r.outcome for r in report)
    return ImportResult(accepted=outcomes["accepted"], unchanged=outcomes["unchanged"],
                        refused=outcomes["refused"], rows=report)


# --------------------------------------------------------------------------- engines

async def _check_engine(uow: UnitOfWork, checks: EngineChecks, ws: str, spec: EngineSpec) -> None:
    """An engine may only reach what the outbound policy allows and use a key of its own
    workspace: a live secret of it, or a key the operator lists for it. The reasons tell
    nothing about other workspaces or the server (domain/keys.py)."""
    if spec.base_url is not None and (refused := await checks.endpoint_refusal(spec.base_url)):
        raise Invalid("endpoint_refused", f"base_url: {refused}")
    if spec.api_key_secret_id is not None:
        secret = await uow.secrets.get(ws, spec.api_key_secret_id)
        if secret is None or secret["retired_at"] is not None:
            raise Invalid("unknown_secret", SECRET_UNUSABLE)
    if spec.operator_key is not None and not checks.operator_key_available(ws, spec.operator_key):
        raise Invalid("unknown_operator_key", OPERATOR_KEY_UNUSABLE)


async def create_engine(cmd: c.CreateEngine, uow: UnitOfWork, engine_checks: EngineChecks
                        ) -> Row:
    engine_id = cmd.spec.engine_id or _new_id("en")
    body = cmd.spec.model_dump(mode="json", exclude={"engine_id"})
    async with uow:
        await _check_engine(uow, engine_checks, cmd.ws, cmd.spec)
        row = await uow.engines.add(cmd.ws, engine_id, body)
        await uow.commit()
    if row is None:
        raise Conflict("engine_exists", f"engine {engine_id} exists")
    return row


async def replace_engine(cmd: c.ReplaceEngine, uow: UnitOfWork, engine_checks: EngineChecks
                         ) -> Row:
    ws, engine_id = cmd.ws, cmd.engine_id
    body = cmd.spec.model_dump(mode="json", exclude={"engine_id"})
    async with uow:
        if await uow.engines.get(ws, engine_id) is None:
            raise NotFound("not_found", f"no engine {engine_id}")
        await _check_engine(uow, engine_checks, ws, cmd.spec)
        row = await uow.engines.replace(ws, engine_id, body)
        await uow.commit()
    if row is None:
        raise NotFound("not_found", f"no engine {engine_id}")
    return row


async def retire_engine(cmd: c.RetireEngine, uow: UnitOfWork) -> Row:
    async with uow:
        row = await uow.engines.retire(cmd.ws, cmd.engine_id)
        await uow.commit()
    if row is None:
        raise NotFound("not_found", f"no engine {cmd.engine_id}")
    return row


# --------------------------------------------------------------------------- engine secrets

async def create_secret(cmd: c.CreateSecret, uow: UnitOfWork, sealer: Sealer) -> Row:
    """Seal the value (it is never stored, returned or logged in the clear); the id is the
    server's, random, so it can be neither chosen nor guessed from another workspace."""
    ws, spec = cmd.ws, cmd.spec
    secret_id = f"sec-{uuid.uuid4().hex}"
    sealed = sealer.seal(ws, secret_id, spec.value.get_secret_value())
    async with uow:
        row = await uow.secrets.add(ws, secret_id, spec.name, sealed)
        await uow.commit()
    if row is None:
        raise Conflict("secret_exists", f"a live secret named {spec.name!r} exists in "
                       "this workspace: retire it or use another name")
    return row


async def list_secrets(q: c.ListSecrets, uow: UnitOfWork) -> Rows:
    async with uow.read():
        return await uow.secrets.list(q.ws, q.include_retired)


async def retire_secret(cmd: c.RetireSecret, uow: UnitOfWork) -> Row:
    """Retired at once and its sealed value erased; engines that use it fail with ``no_key``
    until they are given another key."""
    async with uow:
        row = await uow.secrets.retire(cmd.ws, cmd.secret_id)
        await uow.commit()
    if row is None:
        raise NotFound("not_found", f"no secret {cmd.secret_id}")
    return row


# --------------------------------------------------------------------------- schedules

def cadence_of(spec: ScheduleSpec | dict[str, Any]) -> Cadence:
    s = spec if isinstance(spec, ScheduleSpec) else ScheduleSpec.model_validate(spec)
    return Cadence(cron=s.cron, interval_s=s.interval_s)


async def _check_schedule(uow: UnitOfWork, ws: str, spec: ScheduleSpec, now: datetime) -> None:
    if spec.cron is not None and (problem := check_cron(spec.cron, now)):
        raise Invalid("invalid_request", f"cron: {problem}")
    for engine_id in spec.engine_ids:
        row = await uow.engines.get(ws, engine_id)
        if row is None or row["retired_at"] is not None:
            raise Invalid("unknown_engine", f"no live engine {engine_id} in this workspace")


async def create_schedule(cmd: c.CreateSchedule, uow: UnitOfWork,
                          now: datetime | None = None) -> Row:
    ws, spec = cmd.ws, cmd.spec
    schedule_id = spec.schedule_id or _new_id("sc")
    body = spec.model_dump(mode="json", exclude={"schedule_id", "active"})
    now = now or datetime.now(UTC)
    async with uow:
        await _check_schedule(uow, ws, spec, now)
        # A new schedule is due at once: its first slot is the current one.
        row = await uow.schedules.add(ws, schedule_id, body, spec.active, now)
        await uow.commit()
    if row is None:
        raise Conflict("schedule_exists", f"schedule {schedule_id} exists")
    return row


async def replace_schedule(cmd: c.ReplaceSchedule, uow: UnitOfWork) -> Row:
    ws, schedule_id, spec = cmd.ws, cmd.schedule_id, cmd.spec
    body = spec.model_dump(mode="json", exclude={"schedule_id", "active"})
    now = datetime.now(UTC)
    async with uow:
        await _check_schedule(uow, ws, spec, now)
        current = await uow.schedules.get(ws, schedule_id, for_update=True)
        if current is None:
            raise NotFound("not_found", f"no schedule {schedule_id}")
        # A changed cadence takes effect at once: the next slot after the last planned one, by
        # the new cadence (a schedule never planned is due now). The update clears a planning
        # error: the change may be its fix, and the planner says again if it is not.
        planned = current["planned_through"]
        next_due = cadence_of(spec).next_after(planned) if planned else now
        row = await uow.schedules.update(ws, schedule_id, body, spec.active, next_due)
        await uow.commit()
    if row is None:
        raise NotFound("not_found", f"no schedule {schedule_id}")
    return row


async def retire_schedule(cmd: c.RetireSchedule, uow: UnitOfWork) -> Row:
    async with uow:
        row = await uow.schedules.retire(cmd.ws, cmd.schedule_id)
        await uow.commit()
    if row is None:
        raise NotFound("not_found", f"no schedule {cmd.schedule_id}")
    return row


# --------------------------------------------------------------------------- reads

async def list_prompts(q: c.ListPrompts, uow: UnitOfWork) -> Rows:
    async with uow.read():
        return await uow.prompts.list(q.ws, prompt_set=q.prompt_set, branded=q.branded,
                                      tag=q.tag, include_retired=q.include_retired,
                                      limit=q.limit, after=q.after)


async def list_engines(q: c.ListEngines, uow: UnitOfWork) -> Rows:
    async with uow.read():
        return await uow.engines.list(q.ws)


async def list_schedules(q: c.ListSchedules, uow: UnitOfWork) -> Rows:
    async with uow.read():
        return await uow.schedules.list(q.ws)


async def list_collections(q: c.ListCollections, uow: UnitOfWork,
                           brands: BrandDirectory) -> Rows:
    async with uow.read():
        rows = await uow.collections.list(q.ws, schedule_id=q.schedule_id, status=q.status,
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
    async with uow.read():
        row = await uow.collections.get(q.collection_id)
    if row is None or row["workspace_id"] != q.ws:
        raise NotFound("not_found", f"no collection {q.collection_id}")
    return row


async def get_raw_response(q: c.GetRawResponse, uow: UnitOfWork) -> tuple[str, bytes]:
    """(SHA-256, the engine's raw body byte for byte) of a collected sample."""
    async with uow.read():
        row = await uow.collections.get(q.collection_id)
        body = (await uow.collections.raw(row["raw_sha256"])
                if row is not None and row["workspace_id"] == q.ws and row["raw_sha256"]
                else None)
    if row is None or body is None:
        raise NotFound("not_found", f"no raw response for {q.collection_id}")
    return row["raw_sha256"], body


async def get_slot_progress(q: c.GetSlotProgress, uow: UnitOfWork) -> dict[str, int]:
    """How many of the slot's collections are in each status."""
    async with uow.read():
        return await uow.collections.progress(q.ws, q.schedule_id, q.slot)
