"""The export CSV cells: spreadsheet formula starts are neutralised, times are RFC 3339 Z."""

from datetime import UTC, datetime

import pytest

from attesta_classifier.entrypoints.exports import _cell, _csv_lines

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("value", "shown"), [
    ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"), ("+1", "'+1"), ("-2", "'-2"),
    ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("plain", "plain"), (None, ""), (3, 3),
    (0.25, 0.25), (datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05Z"),
])
def test_cells(value, shown):
    assert _cell(value) == shown


def test_lines_are_rfc4180():
    assert _csv_lines([("a,b", 'say "hi"', None)]) == '"a,b","say ""hi""",\r\n'
