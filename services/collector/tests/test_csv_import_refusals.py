"""Issue #23: the prompt import reports instead of guessing, through the collector's HTTP API on
a real PostgreSQL. A field over the csv module's limit, text after a closing quote and a header
that names a column twice are a 422 for the file with the line (nothing imported: the parser
cannot tell where the next row starts, or which column is meant); a quote never closed is a
refused row that names the lines it swallowed, and the rows before it are imported as usual.
Never a 5xx."""

from __future__ import annotations

import httpx
import pytest

from attesta_collector.adapters.brands import StaticBrandDirectory
from attesta_collector.bootstrap import build_bus
from attesta_collector.entrypoints.http import create_app
from attesta_testing.collector import INTERNAL_TOKEN, engine_checks, random_box

pytestmark = pytest.mark.integration

WS = "ws-import"
CSV = {"Content-Type": "text/csv"}


@pytest.fixture
async def api(pool, new_uow):
    app = create_app(build_bus(new_uow, brands=StaticBrandDirectory({WS: []}),
                               engine_checks=engine_checks(), sealer=random_box()),
                     internal_token=INTERNAL_TOKEN, database=pool)
    async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://collector",
            headers={"X-Attesta-Internal-Token": INTERNAL_TOKEN, "X-Attesta-Workspace": WS}) as c:
        yield c


async def _stored_texts(api: httpx.AsyncClient) -> list[str]:
    return sorted(p["text"] for p in (await api.get("/v1/prompts")).json()["items"])


LONG = "x" * 140_000  # over the csv module's field limit (131,072)


@pytest.mark.parametrize(("name", "content", "line", "needle"), [
    ("a field over the limit", f"text\nfirst\n{LONG}\nafter\n", 3, "longer than 131,072"),
    # Quoted and spanning lines: what follows it is the rest of that field, not rows.
    ("a quoted field over the limit", f'text\nfirst\n"{LONG}\nnot a row\n"\nafter\n', 3,
     "longer than 131,072"),
    ("text after a closing quote", 'text,locale\nfirst,en\nsecond,en\n"a "quote" inside",en\n',
     4, "after a closing quote"),
    ("a column named twice", "text,locale,text\nfirst,en,second\n", 1, "`text` more than once"),
    ("a column without a name", "text,,locale\nfirst,,en\n", 1, "column 2 of the header"),
])
async def test_a_file_the_parser_cannot_split_into_rows_is_a_422_with_its_line(
        api, name, content, line, needle):
    r = await api.post("/v1/prompts/import", content=content.encode(), headers=CSV)
    assert r.status_code == 422, (name, r.status_code, r.text[:300])
    error = r.json()["error"]
    assert error["code"] == "invalid_csv"
    assert error["reason"].startswith(f"line {line}: ") and needle in error["reason"], error
    assert await _stored_texts(api) == []  # all or nothing: nothing was imported


async def test_a_quote_never_closed_is_a_refused_row_naming_the_lines_it_swallowed(api):
    content = ("text,prompt_set\n"
               "first,core\n"
               '"never closed,core\n'
               "second,core\n"
               "third,core\n").encode()
    r = await api.post("/v1/prompts/import", content=content, headers=CSV)
    assert r.status_code == 200, r.text
    report = r.json()
    assert (report["accepted"], report["unchanged"], report["refused"]) == (1, 0, 1)
    refused = [row for row in report["rows"] if row["outcome"] == "refused"]
    assert refused == [{"line": 3, "outcome": "refused", "prompt_id": None,
                        "reason": "a quoted field opened on line 3 is never closed: "
                                  "lines 3-5 were not imported"}]
    assert await _stored_texts(api) == ["first"]  # not "never closed,core\nsecond,core\n..."


async def test_rows_are_numbered_by_the_line_they_start_on(api):
    content = ('text,topic\n"a prompt\non two lines",t1\n"bad funnel",t2,x\nlast,t3\n').encode()
    report = (await api.post("/v1/prompts/import", content=content, headers=CSV)).json()
    assert [(row["line"], row["outcome"]) for row in report["rows"]] == [
        (2, "accepted"), (4, "refused"), (5, "accepted")]


async def test_jsonl_lines_end_at_newlines_only(api):
    # U+2028 is a valid character inside a JSON string; it does not end the line.
    content = '{"text": "one\u2028prompt"}\n{"text": "two"}\r\n'.encode()
    r = await api.post("/v1/prompts/import?format=jsonl", content=content)
    assert r.status_code == 200, r.text
    assert [(row["line"], row["outcome"]) for row in r.json()["rows"]] == [
        (1, "accepted"), (2, "accepted")]
