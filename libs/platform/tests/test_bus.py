"""The message bus (``attesta_platform.bus``): dependencies bound by parameter name once,
fresh ones made per message, a missing dependency refused at start-up."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from attesta_platform.bus import Message, bootstrap

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class Greet(Message[str]):
    name: str


@dataclass(frozen=True)
class Count(Message[int]):
    pass


async def greet(cmd: Greet, greeting: str, uow: int, punctuation: str = "!") -> str:
    return f"{greeting}, {cmd.name} ({uow}){punctuation}"


async def count(cmd: Count, uow: int) -> int:
    return uow


async def test_dependencies_are_bound_by_name_and_fresh_ones_made_per_message():
    made = itertools.count(1)
    bus = bootstrap({Greet: greet, Count: count}, fresh={"uow": lambda: next(made)},
                    greeting="Hello", unused="ignored")
    assert await bus.handle(Greet("Ana")) == "Hello, Ana (1)!"  # the default kept
    assert await bus.handle(Count()) == 2
    assert bus.messages == {Greet, Count}
    bus = bootstrap({Greet: greet}, fresh={"uow": lambda: 0}, greeting="Hi", punctuation=".")
    assert await bus.handle(Greet("Rui")) == "Hi, Rui (0)."


async def test_a_missing_dependency_fails_at_bootstrap_and_an_unknown_message_on_handle():
    with pytest.raises(TypeError, match="greeting"):
        bootstrap({Greet: greet}, fresh={"uow": lambda: 0})
    bus = bootstrap({Count: count}, uow=7)  # a static dependency works too
    assert await bus.handle(Count()) == 7
    with pytest.raises(LookupError, match="Greet"):
        await bus.handle(Greet("x"))
