"""The SPA's built files at ``/`` (mounted last, so every API route wins)."""

import re
from collections.abc import Callable
from typing import Any

from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException


# Files next to the app that are not the app: tests, dotfiles, package manifests.
_NOT_SERVED = re.compile(r"(^|/)(\.[^/]|node_modules(/|$)|tests?(/|$)|package(-lock)?\.json$)"
                         r"|\.(test|spec)\.[A-Za-z0-9]+$")


class SpaFiles(StaticFiles):
    """The SPA's files; a GET for a path that is no file and not an API path gets index.html
    (client-side routing). API paths keep their JSON 404; test files (``*.test.mjs``, ``tests/``)
    and dotfiles are never served (404). ``is_api_path`` says whether an API route has the path
    (with other methods): the mount at ``/`` matches every GET in full, so the router's own 405
    for ``GET /v1/chat`` never happens and this answers it instead."""

    def __init__(self, *args: Any, is_api_path: Callable[[str], bool] = lambda _: False,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._is_api_path = is_api_path

    async def get_response(self, path: str, scope: Any) -> Response:
        if _NOT_SERVED.search(path):
            raise HTTPException(404)
        try:
            return await super().get_response(path, scope)
        except HTTPException as exc:
            api = path == "v1" or path.startswith("v1/") or path in ("healthz", "readyz",
                                                                       "metrics")
            if exc.status_code == 404 and self._is_api_path("/" + path):
                raise HTTPException(405) from exc
            if exc.status_code != 404 or api or scope["method"] not in ("GET", "HEAD"):
                raise
            return await super().get_response("index.html", scope)
