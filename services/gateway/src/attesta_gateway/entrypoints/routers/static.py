"""The SPA's built files at ``/`` (mounted last, so every API route wins)."""

from typing import Any

from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException


class SpaFiles(StaticFiles):
    """The SPA's files; a GET for a path that is no file and not an API path gets index.html
    (client-side routing). API paths keep their JSON 404."""

    async def get_response(self, path: str, scope: Any) -> Response:
        try:
            return await super().get_response(path, scope)
        except HTTPException as exc:
            api = path == "v1" or path.startswith("v1/") or path in ("healthz", "readyz",
                                                                       "metrics")
            if exc.status_code != 404 or api or scope["method"] not in ("GET", "HEAD"):
                raise
            return await super().get_response("index.html", scope)
