"""``attesta evidence <subcommand>``: migrate, keygen, public-key, verify.

``verify`` needs nothing but the log's public key and a base URL (the gateway's or the evidence
service's): it exits 0 when every check held, 1 when one failed, 2 when it could not run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attesta_evidence.settings import EvidenceSettings


def _settings() -> EvidenceSettings:
    # the settings only for the subcommands that read them: `verify` needs none
    from attesta_evidence.settings import EvidenceSettings
    from attesta_platform.settings import load_settings

    return load_settings(EvidenceSettings)


def _migrate(args: argparse.Namespace) -> int:
    # the CLI imports a subcommand's wiring only when it runs (here psycopg and Alembic's runner)
    from attesta_evidence.adapters.migrate import MIGRATION
    from attesta_platform.migrations import migrate_command

    s = _settings()
    return migrate_command(MIGRATION, s.pg_admin_url, s.evidence_database, s.evidence_db_role,
                           s.evidence_db_password,
                           done="evidence: database {database} migrated; app role {role} has "
                           "SELECT/INSERT only")


def _keygen(args: argparse.Namespace) -> int:
    # the CLI imports a subcommand's wiring only when it runs (here the key files, cryptography)
    from attesta_evidence.adapters.keys import SigningKeyError, generate_key_file, public_key_path
    from attesta_evidence.domain.signing import key_id

    out = Path(args.out) if args.out else _settings().evidence_signing_key_file
    try:
        key = generate_key_file(out, overwrite=args.force)
    except SigningKeyError as exc:
        print(f"evidence keygen: {exc}", file=sys.stderr)
        return 2
    print(f"private key: {out} (mode 0600; keep it secret)")
    print(f"public key:  {public_key_path(out)} (publish it)")
    print(f"key id:      {key_id(key.public_key())}")
    return 0


def _public_key(args: argparse.Namespace) -> int:
    # the CLI imports a subcommand's wiring only when it runs (here the key files, cryptography)
    from attesta_evidence.adapters.keys import SigningKeyError, load_private_key
    from attesta_evidence.domain.signing import public_key_pem

    path = Path(args.key) if args.key else _settings().evidence_signing_key_file
    try:
        print(public_key_pem(load_private_key(path).public_key()), end="")
    except SigningKeyError as exc:
        print(f"evidence public-key: {exc}", file=sys.stderr)
        return 2
    return 0


def _verify(args: argparse.Namespace) -> int:
    # the CLI imports a subcommand's wiring only when it runs (here the contracts, an HTTP client)
    from attesta_contracts.api.evidence import SignedTreeHead
    from attesta_evidence.adapters.log_client import FetchError, LogClient
    from attesta_evidence.domain.signing import load_public_key
    from attesta_evidence.service_layer import verification as v

    def say(line: str) -> None:
        print(line, flush=True)

    try:
        key = load_public_key(Path(args.public_key).read_bytes())
    except (OSError, ValueError) as exc:
        print(f"verify: cannot read the public key {args.public_key}: {exc}", file=sys.stderr)
        return 2

    def head_file(path: str) -> SignedTreeHead:
        try:
            return SignedTreeHead.model_validate_json(Path(path).read_bytes())
        except (OSError, ValueError) as exc:
            raise v.VerificationFailed(f"cannot read a signed tree head from {path}: {exc}") from None

    client = LogClient(args.base_url)
    try:
        if args.what == "inclusion":
            content = None
            if args.content_file is not None:
                content = Path(args.content_file).read_bytes()
            elif args.content is not None:
                content = args.content.encode("utf-8")
            v.verify_inclusion(client, key, content=content, sha256=args.sha256,
                               saved=head_file(args.tree_head) if args.tree_head else None, say=say)
        elif args.what == "consistency":
            old = head_file(args.old)
            new = head_file(args.new) if args.new else client.tree_head()
            v.verify_consistency(client, key, old, new, say)
        elif args.what == "log":
            v.audit_log(client, key, head_file(args.tree_head), say)
        elif args.what == "tree-head":
            head = client.tree_head()
            v.check_tree_head(head, key)
            say(f"OK tree head: size {head.tree_size}, root {head.root_hash}, "
                f"timestamp_ms {head.timestamp_ms}")
            if args.save:
                Path(args.save).write_text(head.model_dump_json(indent=2) + "\n")
                say(f"saved to {args.save}")
    except v.VerificationFailed as exc:
        print(f"FAIL {exc}", flush=True)
        return 1
    except FetchError as exc:
        print(f"FAIL cannot fetch what the check needs: {exc}", flush=True)
        return 1
    finally:
        client.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="attesta evidence")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("migrate", help="create database/role (ATTESTA_PG_ADMIN_URL) and run alembic")

    kg = sub.add_parser("keygen", help="generate the log's Ed25519 signing key")
    kg.add_argument("--out", help="private key file (default ATTESTA_EVIDENCE_SIGNING_KEY_FILE)")
    kg.add_argument("--force", action="store_true", help="replace an existing key")

    pk = sub.add_parser("public-key", help="print the PEM public key of the signing key")
    pk.add_argument("--key", help="private key file (default ATTESTA_EVIDENCE_SIGNING_KEY_FILE)")

    vf = sub.add_parser("verify", help="check proofs with nothing but the public key")
    vsub = vf.add_subparsers(dest="what", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--base-url", required=True,
                       help="the gateway's or the evidence service's URL, e.g. http://127.0.0.1:8080")
        p.add_argument("--public-key", required=True,
                       help="the log's public key: PEM, or base64 of the raw 32 bytes")

    inc = vsub.add_parser("inclusion", help="evidence is in the signed log (and consistent "
                                            "with a saved head)")
    common(inc)
    src = inc.add_mutually_exclusive_group(required=True)
    src.add_argument("--content-file", help="file holding the exact bytes")
    src.add_argument("--content", help="the exact text (its UTF-8 bytes)")
    src.add_argument("--sha256", help="only the hash")
    inc.add_argument("--tree-head", help="a signed tree head saved earlier (JSON)")

    con = vsub.add_parser("consistency", help="a newer head only appended to an older one")
    common(con)
    con.add_argument("--old", required=True, help="older signed tree head (JSON)")
    con.add_argument("--new", help="newer signed tree head (JSON); default: fetch the latest")

    aud = vsub.add_parser("log", help="rebuild a saved head's whole tree from the served entries")
    common(aud)
    aud.add_argument("--tree-head", required=True, help="a signed tree head saved earlier (JSON)")

    th = vsub.add_parser("tree-head", help="fetch the latest head, check its signature, save it")
    common(th)
    th.add_argument("--save", help="write it here (JSON) to check consistency later")
    return parser


def main(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    handlers = {"migrate": _migrate, "keygen": _keygen, "public-key": _public_key,
                "verify": _verify}
    raise SystemExit(handlers[args.command](args))


if __name__ == "__main__":
    main(sys.argv[1:])
