"""HTTP entrypoint of the gateway (walking skeleton: POST /v1/chat and health)."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from attesta_contracts.chat import QUESTION_MAX_CHARS, ChatRequested
from attesta_contracts.topics import CHAT_ANSWERED, CHAT_REQUESTED, DEAD_LETTERED
from attesta_gateway.adapters.replies import ReplyRouter
from attesta_platform.messaging import Messaging


class ChatBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=QUESTION_MAX_CHARS)
    top_k: int = Field(default=5, ge=1, le=20)


def error(status: int, code: str, reason: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": {"code": code, "reason": reason}})


def create_app(messaging: Messaging, instance_id: str, reply_timeout_s: float,
               partitions: int) -> FastAPI:
    router = ReplyRouter()
    state = {"ready": False}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await messaging.ensure_topics([CHAT_REQUESTED, CHAT_ANSWERED, DEAD_LETTERED], partitions)
        sub = messaging.consume(CHAT_ANSWERED, group_id=f"gateway-{instance_id}",
                                handler=router.on_reply, auto_offset_reset="latest")
        await messaging.start()
        await messaging.wait_assigned(sub)
        state["ready"] = True
        yield
        await messaging.stop()

    app = FastAPI(title="Attesta gateway", lifespan=lifespan)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid body"}
        where = ".".join(str(p) for p in first["loc"])
        return error(422, "invalid_request", f"{where}: {first['msg']}")

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 400:  # body is not JSON at all: still a malformed body
            return error(422, "invalid_request", f"body is not valid JSON: {exc.detail}")
        return error(exc.status_code, "http_error", str(exc.detail))

    @app.get("/healthz")
    async def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        if not state["ready"]:
            return error(503, "not_ready", "consumer not assigned yet")
        return JSONResponse({"status": "ready", "instance": instance_id})

    @app.post("/v1/chat")
    async def chat(body: ChatBody) -> JSONResponse:
        request_id = str(uuid.uuid4())
        fut = router.expect(request_id)
        try:
            await messaging.publish(
                CHAT_REQUESTED,
                ChatRequested(request_id=request_id, question=body.question, top_k=body.top_k,
                              reply_to=instance_id),
                key=request_id, correlation_id=request_id,
            )
            reply = await asyncio.wait_for(fut, timeout=reply_timeout_s)
        except TimeoutError:
            return error(504, "answer_timeout",
                         f"no answer within {reply_timeout_s:g} s (request {request_id})")
        finally:
            router.forget(request_id)
        return JSONResponse(reply.model_dump(mode="json"))

    return app
