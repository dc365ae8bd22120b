"""A service's message bus: one handler per command or query, dependencies injected by name.

cosmicpython's ``bootstrap`` + ``messagebus``, kept small: a service lists its handlers in one
``HANDLERS`` table (message type -> ``async def handler(message, <dependency>...)``), and
``bootstrap(HANDLERS, fresh={...}, **dependencies)`` binds each handler's dependencies by its
parameter names, once, at start-up. ``fresh`` names the dependencies made anew for every
message (a unit of work holds one connection and serves one task at a time). HTTP routes,
Kafka subscribers, workers and the CLI all call ``await bus.handle(message)`` and get what the
handler returns; errors pass through unchanged, so each entrypoint maps them once at its edge.

A message class subclasses ``Message[Result]`` so ``handle`` is typed: ``handle(GetThing(...))``
is a ``Thing`` to the type checker.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

R = TypeVar("R")
Handler = Callable[..., Awaitable[Any]]


class Message(Generic[R]):
    """Base of a service's commands and queries; ``R`` is what handling one returns."""

    __slots__ = ()


@dataclass(frozen=True)
class _Bound:
    handler: Handler
    fresh: tuple[tuple[str, Callable[[], Any]], ...]

    async def __call__(self, message: Message[Any]) -> Any:
        return await self.handler(message, **{name: make() for name, make in self.fresh})


class MessageBus:
    def __init__(self, handlers: Mapping[type[Message[Any]], Callable[[Any], Awaitable[Any]]]):
        self._handlers = dict(handlers)

    @property
    def messages(self) -> frozenset[type[Message[Any]]]:
        """What this service can be asked to do."""
        return frozenset(self._handlers)

    async def handle(self, message: Message[R]) -> R:
        handler = self._handlers.get(type(message))
        if handler is None:
            raise LookupError(f"no handler for {type(message).__name__}")
        return cast(R, await handler(message))


def bootstrap(handlers: Mapping[type[Message[Any]], Handler], *,
              fresh: Mapping[str, Callable[[], Any]] | None = None,
              **dependencies: Any) -> MessageBus:
    """Bind every handler's dependencies (its parameters after the message) by name. A handler
    that needs a dependency nobody gave fails here, at start-up, not on its first message; a
    parameter with a default keeps it unless a dependency of that name is given."""
    fresh = dict(fresh or {})
    bound: dict[type[Message[Any]], Callable[[Any], Awaitable[Any]]] = {}
    for kind, handler in handlers.items():
        params = list(inspect.signature(handler).parameters.values())[1:]
        missing = [p.name for p in params if p.default is p.empty
                   and p.name not in dependencies and p.name not in fresh]
        if missing:
            raise TypeError(f"{handler.__qualname__} (for {kind.__name__}) needs "
                            f"{', '.join(missing)}: not given to bootstrap")
        static = {p.name: dependencies[p.name] for p in params if p.name in dependencies}
        per_message = tuple((p.name, fresh[p.name]) for p in params if p.name in fresh)
        bound[kind] = _Bound(functools.partial(handler, **static), per_message)
    return MessageBus(bound)
