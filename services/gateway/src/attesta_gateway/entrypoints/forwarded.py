"""Routes that pass a call on to an internal service under the same path, built from one table
(``entrypoints/route_table.py``): each row names the contract models, so the OpenAPI document
is the whole contract, and this module turns a row into a FastAPI route.

A forwarded route checks what the gateway owns (the key, its rate limit and its role, or the
public per-client limit; the Idempotency-Key; the declared path, query and body), then forwards:
- the path, with the caller's values (a SHA-256 lowercased);
- the query parameters the row declares, by their public names, enums as their values;
- the body as the bytes that arrived: FastAPI reads and validates them once against the row's
  model, and those same bytes go on (nothing is parsed again or re-serialised);
- a creating POST (``idempotency``) at most once per Idempotency-Key, an export (``media_types``)
  passed on while it arrives.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations as objects.

import inspect
import string
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Annotated, Any, Literal, get_args

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import Response
from pydantic.fields import FieldInfo

from attesta_gateway.entrypoints.api import (
    OPAQUE_ID_PATTERN,
    BrandIdP,
    Caller,
    IdemOptional,
    IdemRequired,
    RunIdP,
    Sha,
    errors,
    public_limit,
    require_role,
    role_extra,
    sha_path,
)
from attesta_gateway.domain.commands import Forward
from attesta_gateway.domain.roles import Role, required_role
from attesta_gateway.entrypoints.deps import Container, Gateway
from attesta_gateway.entrypoints.responses import to_response
from attesta_platform.http import ApiError
from attesta_platform.logs import get_logger

IdP = Annotated[str, Path(pattern=OPAQUE_ID_PATTERN)]
# A path parameter's type by its name (the same name means the same kind of id everywhere).
PATH_TYPES: dict[str, Any] = {"brand_id": BrandIdP, "run_id": RunIdP, "sha256": Sha}
REQUIRED = inspect.Parameter.empty


@dataclass(frozen=True)
class Q:
    """A query parameter: its Python name (``from_`` for ``from``: the public name is the
    annotation's alias), type and default (``REQUIRED``: none)."""

    name: str
    annotation: Any
    default: Any = None

    @property
    def public_name(self) -> str:
        aliases = [m.alias for m in get_args(self.annotation)[1:]
                   if isinstance(m, FieldInfo) and m.alias]
        return aliases[0] if aliases else self.name


@dataclass(frozen=True)
class Route:
    """One forwarded route. ``name`` is the operation's name (its operationId and, without a
    ``summary``, its summary come from it)."""

    name: str
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: str
    service: Literal["classifier", "evidence", "collector"]
    response_model: Any = None
    responses: dict[int | str, dict[str, Any]] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    summary: str | None = None
    description: str | None = None
    status_code: int | None = None
    body: Any = None  # the request body's model (validated, then forwarded as it arrived)
    body_required: bool = True  # False: an optional body; without one, the model's defaults go
    query: tuple[Q, ...] = ()
    public: bool = False  # no key: the evidence service's public routes, per-client limit
    idempotency: Literal["optional", "required"] | None = None  # a creating POST
    media_types: tuple[str, ...] | None = None  # an export, passed on while it arrives
    # The body is a file whose media type names the upstream's ``format`` parameter.
    formats: dict[str, str] | None = None
    formats_reason: str = ""  # the 415's reason for any other media type
    response_class: type[Response] | None = None
    openapi_extra: dict[str, Any] | None = None

    @property
    def path_params(self) -> list[str]:
        return [name for _, name, _, _ in string.Formatter().parse(self.path) if name]


log = get_logger("attesta.gateway")


def router(routes: tuple[Route, ...]) -> APIRouter:
    out = APIRouter()
    for route in routes:
        role = None if route.public else required_role(route.method, route.path)
        if role is None and not route.public:
            log.warning("route not in the role table: refused to every key",
                        route=f"{route.method} {route.path}")
        openapi_extra = route.openapi_extra if route.public else role_extra(
            role, route.openapi_extra)
        responses = route.responses if route.public else {**route.responses, **{
            code: spec for code, spec in errors(403).items() if code not in route.responses}}
        extra: dict[str, Any] = {k: v for k, v in (
            ("status_code", route.status_code), ("summary", route.summary),
            ("description", route.description), ("response_class", route.response_class),
            ("openapi_extra", openapi_extra)) if v is not None}
        out.add_api_route(route.path, _endpoint(route, role), methods=[route.method],
                          name=route.name, response_model=route.response_model,
                          responses=responses, tags=list(route.tags) or None,
                          dependencies=[Depends(public_limit)] if route.public else None,
                          **extra)
    return out


def _endpoint(route: Route, role: Role | None = None) -> Callable[..., Awaitable[Response]]:
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter(name, kw, annotation=PATH_TYPES.get(name, IdP))
              for name in route.path_params]
    if route.body is not None:
        params.append(inspect.Parameter("body", kw, annotation=route.body,
                                        default=REQUIRED if route.body_required else None))
    params.append(inspect.Parameter("request", kw, annotation=Request))
    params.append(inspect.Parameter("gw", kw, annotation=Container) if route.public else
                  inspect.Parameter("caller", kw, annotation=Annotated[Caller, require_role(
                      role, f"{route.method} {route.path}")]))
    if route.idempotency is not None:
        params.append(inspect.Parameter(
            "idem", kw, annotation=IdemRequired if route.idempotency == "required" else
            IdemOptional))
    params += [inspect.Parameter(q.name, kw, annotation=q.annotation, default=q.default)
               for q in route.query]
    public_names = [(q.name, q.public_name) for q in route.query]

    async def endpoint(request: Request, **values: Any) -> Response:
        path = route.path.format(**{name: sha_path(values[name]) if name == "sha256"
                                    else values[name] for name in route.path_params})
        body, query = await _body(route, request, values)
        query.update({public: _value(values[name]) for name, public in public_names})
        return await _forward(route, request, path, query or None, body, values)

    endpoint.__name__ = endpoint.__qualname__ = route.name
    endpoint.__doc__ = None  # FastAPI would document a docstring as the operation's description
    endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        params, return_annotation=Response)
    return endpoint


async def _forward(route: Route, request: Request, path: str, query: dict[str, object] | None,
                   body: bytes | None, values: dict[str, Any]) -> Response:
    if route.public:
        gw: Gateway = values["gw"]
        result = await gw.bus.handle(Forward(route.service, route.method, path, None,
                                             params=query, body=body))
        return to_response(result)
    caller: Caller = values["caller"]
    if route.idempotency is not None:
        return await caller.create(request, values["idem"], route.service, path, body=body)
    if route.media_types is not None:
        return await caller.stream(route.service, path, params=query,
                                   media_types=route.media_types)
    return await caller.forward(route.service, route.method, path, params=query, body=body)


async def _body(route: Route, request: Request,
                values: dict[str, Any]) -> tuple[bytes | None, dict[str, object]]:
    """The body to forward, and the query parameter a file's media type names."""
    if route.formats is not None:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype not in route.formats:
            raise ApiError(415, "unsupported_media_type", route.formats_reason)
        return await request.body(), {"format": route.formats[ctype]}
    if route.body is None:
        return (None if route.method == "GET" else b""), {}
    if values["body"] is None:  # an optional body left out: the model's defaults
        return _model(route.body)().model_dump_json().encode(), {}
    return await request.body(), {}  # the bytes FastAPI has already read and validated


def _model(annotation: Any) -> Any:
    """``Model`` of ``Model | None``."""
    return next(a for a in (get_args(annotation) or (annotation,)) if a is not type(None))


def _value(value: object) -> object:
    return value.value if isinstance(value, Enum) else value

