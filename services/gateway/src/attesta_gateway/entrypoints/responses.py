"""The edge's one translation from the service layer to HTTP: ``HTTP_STATUS`` maps each domain
error (``service_layer/errors.py``) to its status, ``api_error`` adds the headers a status
carries, and ``to_response`` turns a forwarded result into the answer."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from attesta_gateway.service_layer.errors import (
    AuthenticationThrottled,
    BadUpstream,
    GatewayError,
    InFlight,
    KeyReused,
    RateLimited,
    TimedOut,
    Unauthenticated,
    Unavailable,
)
from attesta_gateway.service_layer.forwarding import Forwarded, Streamed
from attesta_platform.http import ApiError, error_response

HTTP_STATUS: dict[type[GatewayError], int] = {
    Unauthenticated: 401,
    InFlight: 409,
    KeyReused: 422,
    RateLimited: 429,  # AuthenticationThrottled too
    BadUpstream: 502,
    Unavailable: 503,
    TimedOut: 504,
}
REPLAYED_HEADER = "Idempotent-Replayed"
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="attesta"'}


def api_error(exc: GatewayError) -> ApiError:
    status = next(HTTP_STATUS[cls] for cls in type(exc).__mro__ if cls in HTTP_STATUS)
    headers: dict[str, str] = {}
    if exc.retry_after:
        headers["Retry-After"] = exc.retry_after
    if isinstance(exc, RateLimited) and exc.limit is not None:
        headers.update({"RateLimit-Limit": str(exc.limit), "RateLimit-Remaining": "0"})
    if isinstance(exc, (Unauthenticated, AuthenticationThrottled)):
        headers.update(_CHALLENGE)  # the caller still has to authenticate
    return ApiError(status, exc.code, exc.reason, headers or None)


def error_answer(exc: GatewayError) -> JSONResponse:
    error = api_error(exc)
    return error_response(error.status, error.code, error.reason, error.headers)


def install_domain_error_handler(app: FastAPI) -> None:
    @app.exception_handler(GatewayError)
    async def _domain(request: Request, exc: GatewayError) -> JSONResponse:
        return error_answer(exc)


def to_response(result: Forwarded | Streamed) -> Response:
    if isinstance(result, GatewayError):
        return error_answer(result)
    if isinstance(result, Streamed):
        disposition = ({"Content-Disposition": result.content_disposition}
                       if result.content_disposition else None)
        return StreamingResponse(result.chunks, status_code=result.status,
                                 media_type=result.content_type, headers=disposition)
    headers = {REPLAYED_HEADER: "true"} if result.replayed else (
        {"Retry-After": result.retry_after} if result.retry_after else None)
    return Response(content=result.content, status_code=result.status,
                    media_type=result.content_type, headers=headers)
