"""``attesta gateway ...``: migrate the database, manage API keys, write the OpenAPI document.

    attesta gateway migrate
    attesta gateway keys create --workspace W [--name N] [--role viewer|editor|admin]
                                                           # prints the key once
    attesta gateway keys revoke <key id>
    attesta gateway keys list [--workspace W]
    attesta gateway openapi [--check] [--output docs/openapi.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from attesta_gateway.adapters.migrate import migrate
from attesta_gateway.bootstrap import build_app, unit_of_work
from attesta_gateway.domain.commands import CreateKey, ListKeys, RevokeKey
from attesta_gateway.domain.keys import KEY_ID_RE, Revocation, valid_workspace
from attesta_gateway.domain.roles import DEFAULT_ROLE, ROLES, Role
from attesta_gateway.service_layer.handlers import HANDLERS, KEY_COMMANDS
from attesta_gateway.settings import GatewaySettings
from attesta_platform.bus import bootstrap as bind_handlers
from attesta_platform.settings import load_settings

OPENAPI_PATH = Path(__file__).resolve().parents[4] / "docs" / "openapi.json"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="attesta gateway")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="create/upgrade the gateway database and its app role")
    keys = sub.add_parser("keys", help="API keys").add_subparsers(dest="action", required=True)
    create = keys.add_parser("create", help="create a key (printed once, stored hashed)")
    create.add_argument("--workspace", required=True)
    create.add_argument("--name", default="")
    # admin by default: the CLI is the operator's way to make a workspace's first key (which
    # must be able to manage the others) and what the demo and the test fixtures run; an
    # operator who can run it already holds more than any key (the database and the secret).
    create.add_argument("--role", choices=[str(r) for r in ROLES], default=str(DEFAULT_ROLE),
                        help=f"the key's role in its workspace (default: {DEFAULT_ROLE})")
    revoke = keys.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("key_id")
    listing = keys.add_parser("list", help="list keys (ids, workspaces, names; never secrets)")
    listing.add_argument("--workspace")
    listing.add_argument("--json", action="store_true")
    openapi = sub.add_parser("openapi", help="write (or --check) the committed OpenAPI document")
    openapi.add_argument("--output", type=Path, default=OPENAPI_PATH)
    openapi.add_argument("--check", action="store_true",
                         help="exit 1 when the committed document differs from the code")
    args = parser.parse_args(argv)

    if args.command == "openapi":
        raise SystemExit(_openapi(args.output, args.check))
    settings = load_settings(GatewaySettings)
    if args.command == "migrate":
        db = migrate(settings.pg_admin_url, settings.app_db_url())
        print(f"gateway database {db} is at the latest schema")
        return
    # Keys need the real secret (their digests) and database; not the internal token or CORS.
    problems = [p for p in settings.problems() if "SECRET" in p or "database" in p]
    if problems:
        print("invalid production settings:\n  " + "\n  ".join(problems), file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(asyncio.run(_keys(settings, args)))


async def _keys(settings: GatewaySettings, args: argparse.Namespace) -> int:
    uow = unit_of_work(settings)
    bus = bind_handlers({kind: HANDLERS[kind] for kind in KEY_COMMANDS}, uow=uow,
                        secret=settings.secret_bytes())
    try:
        if args.action == "create":
            if not valid_workspace(args.workspace):
                print("workspace ids are 1-100 of [A-Za-z0-9_.-], starting with a letter or digit",
                      file=sys.stderr)
                return 2
            if len(args.name) > 200:
                print("--name is at most 200 characters", file=sys.stderr)
                return 2
            issued = await bus.handle(CreateKey(args.workspace, args.name, Role(args.role)))
            key_id, plaintext = issued.key.key_id, issued.plaintext
            if settings.env != "production" and not settings.gateway_secret:
                print("warning: hashed with the development secret; this key will not work "
                      "on a production gateway", file=sys.stderr)
            print(f"key id:    {key_id}\nworkspace: {args.workspace}\nrole:      {args.role}\n"
                  "key (shown once, store it now):", file=sys.stderr)
            print(plaintext)
            return 0
        if args.action == "revoke":
            if not KEY_ID_RE.match(args.key_id):
                print("a key id is 16 hex characters", file=sys.stderr)
                return 2
            if await bus.handle(RevokeKey(args.key_id)) is Revocation.REVOKED:
                print(f"revoked {args.key_id} (gateways stop accepting it within "
                      f"{settings.key_cache_ttl_s:g} s)")
                return 0
            print(f"no active key {args.key_id}", file=sys.stderr)
            return 1
        rows = await bus.handle(ListKeys(args.workspace))
        if args.json:
            print(json.dumps([{"key_id": k.key_id, "workspace_id": k.workspace_id,
                               "name": k.name, "role": str(k.role),
                               "created_at": k.created_at.isoformat() if k.created_at else None,
                               "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
                               "last_used_at": (k.last_used_at.isoformat()
                                                if k.last_used_at else None)}
                              for k in rows], indent=2))
        else:
            for k in rows:
                state = f"revoked {k.revoked_at:%Y-%m-%d %H:%M}" if k.revoked_at else "active"
                print(f"{k.key_id}  {k.workspace_id:20}  {k.role:6}  {state:24}  {k.name}")
        return 0
    finally:
        await uow.close()


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of the gateway, built from the code with development settings
    (nothing connects: building the app opens no connection)."""
    return build_app(GatewaySettings(env="development")).openapi()


def render_openapi() -> str:
    return json.dumps(openapi_document(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def _openapi(output: Path, check: bool) -> int:
    text = render_openapi()
    if check:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current != text:
            print(f"{output} is stale: run `attesta gateway openapi`", file=sys.stderr)
            return 1
        print(f"{output} is up to date")
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output}")
    return 0
