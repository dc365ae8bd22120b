"""The evidence service's seam: every command and query has a handler the real bootstrap binds,
and every domain error has one HTTP answer at the edge (issue #27)."""

from __future__ import annotations

from attesta_evidence.bootstrap import build_bus
from attesta_evidence.domain import commands
from attesta_evidence.entrypoints.http import HTTP_ERRORS
from attesta_evidence.service_layer import errors
from attesta_evidence.service_layer.handlers import HANDLERS
from attesta_platform.bus import Message


def test_every_message_has_a_handler_and_the_bootstrap_provides_its_dependencies():
    messages = {v for v in vars(commands).values()
                if isinstance(v, type) and issubclass(v, Message) and v is not Message}
    assert len(messages) >= 10 and messages == set(HANDLERS)
    bus = build_bus(lambda: None)
    assert bus.messages == messages  # bootstrap refuses a handler whose dependency is missing


def test_every_domain_error_has_an_http_status():
    kinds = [v for v in vars(errors).values()
             if isinstance(v, type) and issubclass(v, errors.ServiceError)]
    unmapped = [k.__name__ for k in kinds if not set(k.__mro__) & set(HTTP_ERRORS)]
    assert len(kinds) >= 4 and unmapped == []
    assert HTTP_ERRORS[errors.NotFound] == (404, "not_found")
    assert HTTP_ERRORS[errors.OutOfRange] == (400, "invalid_range")
    assert HTTP_ERRORS[errors.InvalidContent] == (422, "invalid_content")
