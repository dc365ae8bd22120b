"""``POST /v1/chat``: the grounded assistant, request/reply over Kafka (service_layer/chat)."""

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from attesta_contracts.chat import ChatAnswered, Question
from attesta_gateway.entrypoints.api import (
    authorize,
    client_of,
    errors,
    principal_of,
    role_extra,
)
from attesta_gateway.entrypoints.deps import Container
from attesta_gateway.domain.commands import AskAssistant
from attesta_gateway.domain.roles import required_role
from attesta_gateway.service_layer.auth import unauthorized

router = APIRouter(tags=["chat"])
CHAT_ROLE = required_role("POST", "/v1/chat")  # the role a key needs (anonymous: no key)


class ChatBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: Question  # 1-2000 characters, no NUL (422)
    top_k: int = Field(default=5, ge=1, le=20)


@router.post("/v1/chat", response_model=ChatAnswered,
             responses=errors(400, 401, 403, 413, 422, 429, 503, 504),
             openapi_extra=role_extra(CHAT_ROLE),
             summary="Ask the grounded assistant (request/reply over Kafka)",
             description="Open to the frontend with a per-client rate limit; an API key, "
                         "when sent, is checked and its workspace used (required when the "
                         "deployment sets ATTESTA_CHAT_REQUIRE_KEY=true); without one the "
                         "answer is recorded in no customer's workspace. Too many chats "
                         "waiting at once: 429 (this key's) or 503 (this gateway's) at once, "
                         "with Retry-After. 504 when no answer arrives within the chat timeout.")
async def chat_route(body: ChatBody, request: Request, gw: Container) -> Any:
    principal = await principal_of(request, gw)
    if principal is None and gw.settings.chat_require_key:
        raise unauthorized("this deployment requires an API key for chat")
    if principal is not None:
        authorize(principal, CHAT_ROLE, "POST /v1/chat")
    async with gw.limits.chat(principal.key_id if principal else None, client_of(request)):
        reply = await gw.bus.handle(AskAssistant(
            body.question, body.top_k, principal.workspace_id if principal else None))
    return JSONResponse(reply.model_dump(mode="json"))
