"""The gateway's container and the one FastAPI dependency that hands it to a route.

``bootstrap.build_gateway`` builds the ``Gateway`` once per process; ``http.create_app`` puts it
on the app; a route (or a dependency of one) asks for it with ``Container``. Imports point one
way: bootstrap -> entrypoints.http -> routers -> entrypoints.api -> this module -> service
layer and adapters, and nothing here imports back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from attesta_gateway.adapters.ratelimit import RedisRateLimiter
from attesta_gateway.adapters.replies import ReplyRouter
from attesta_gateway.adapters.upstream import Upstream
from attesta_gateway.service_layer.auth import Authenticator, LastUsed
from attesta_gateway.service_layer.limits import RateLimits
from attesta_gateway.service_layer.unit_of_work import UnitOfWork
from attesta_gateway.settings import GatewaySettings
from attesta_platform.bus import MessageBus
from attesta_platform.messaging import Messaging


@dataclass
class Gateway:
    """Everything the HTTP app uses, built once per process."""

    settings: GatewaySettings
    messaging: Messaging
    uow: UnitOfWork  # API keys, idempotency records
    authenticator: Authenticator
    last_used: LastUsed  # when each key was last used, at most once a minute per key
    limits: RateLimits
    classifier: Upstream
    evidence: Upstream
    collector: Upstream
    redis: RedisRateLimiter
    replies: ReplyRouter = field(default_factory=ReplyRouter)  # chat answers by request id
    ready: bool = False  # the chat reply consumer is assigned (readiness)
    # What the routes ask of the service layer (service_layer/handlers.py), bound by bootstrap.
    bus: MessageBus = field(init=False)

    def upstream(self, name: str) -> Upstream:
        """The internal service ``name`` ("classifier", "evidence", "collector") a route
        forwards to."""
        upstreams = {"classifier": self.classifier, "evidence": self.evidence,
                     "collector": self.collector}
        return upstreams[name]

    async def close(self) -> None:
        await self.last_used.flush()
        for part in (self.classifier, self.evidence, self.collector):
            await part.close()
        await self.redis.close()
        await self.uow.close()


async def gateway(request: Request) -> Gateway:
    """The process's container: the one place that reads the app's state. Async, so FastAPI
    calls it on the event loop and not in a worker thread."""
    container: Gateway = request.app.state.gateway
    return container


Container = Annotated[Gateway, Depends(gateway)]
