"""Roles of an API key in its workspace, and which role each route needs (pure, no I/O).

- ``viewer``: reads everything of the workspace (GET/HEAD) and its exports; asks the assistant.
- ``editor``: what a viewer does, plus every write to brands, ground truth and facts, prompts,
  engines and their secrets, schedules, runs, reclassification, review decisions and alert rules.
- ``admin``: everything, plus API keys and alert channels (where alerts leave the system: a
  webhook or Slack URL is itself a credential, so even reading channels is admin's).

Roles are ordered (viewer < editor < admin): a route names the least role it needs.

``ROLE_TABLE`` is keyed by route: each rule is a set of methods and a pattern over the route's
path *template* (``/v1/brands/{brand_id}``, as declared, not the request's path), first match
wins. Most rules name one route exactly; the area rules (``/v1/alerts*``, ``/v1/brands*``, ...)
cover routes added to an area later (new alert routes, new brand sub-resources) by the same
policy: reads ``viewer``, writes ``editor``. A route no rule matches is **refused to every key**
(``required_role`` returns None and the gateway answers 403 ``role_not_defined``): failing
closed at the route, not at start-up, so a forgotten row costs that one route, not the whole
public edge (chat, public evidence, health); ``tests/test_gateway_roles.py`` fails on such a
route before it ships.

Resolved once per route when the app is built: a request costs one comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase


class Role(StrEnum):
    VIEWER = "viewer"
    EDITOR = "editor"
    ADMIN = "admin"


ROLES = tuple(Role)  # least to most
_RANK = {role: i for i, role in enumerate(ROLES)}
# Existing keys (created before roles existed) are admins, so no one loses access; the CLI's
# default too (it is how an operator makes a workspace's first key, which must manage the rest).
DEFAULT_ROLE = Role.ADMIN


def allows(have: Role | str, need: Role | str) -> bool:
    """Whether a key of role ``have`` may call a route that needs ``need``."""
    return _RANK[Role(have)] >= _RANK[Role(need)]


READS = frozenset({"GET", "HEAD"})
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
ANY = READS | WRITES


@dataclass(frozen=True)
class RoleRule:
    methods: frozenset[str]
    pattern: str  # fnmatch over the path template: "*" also crosses "/"
    role: Role
    why: str = ""

    def matches(self, method: str, template: str) -> bool:
        return method.upper() in self.methods and fnmatchcase(template, self.pattern)


def _area(prefix: str, why: str) -> tuple[RoleRule, RoleRule]:
    """An area's policy for routes not named above it: reads viewer, writes editor."""
    return (RoleRule(READS, prefix, Role.VIEWER, f"{why}: read"),
            RoleRule(WRITES, prefix, Role.EDITOR, f"{why}: write"))


ROLE_TABLE: tuple[RoleRule, ...] = (
    # -- API keys (gateway-owned) ------------------------------------------------------------
    RoleRule(READS, "/v1/keys/me", Role.VIEWER, "every key may ask who it is"),
    RoleRule(ANY, "/v1/keys", Role.ADMIN, "list and create keys"),
    RoleRule(ANY, "/v1/keys/*", Role.ADMIN, "revoke a key"),
    # -- alerts (#25 item 1; the routes are the classifier's) --------------------------------
    RoleRule(ANY, "/v1/alerts/channels", Role.ADMIN, "where alerts go: URLs are credentials"),
    RoleRule(ANY, "/v1/alerts/channels/*", Role.ADMIN, "where alerts go: URLs are credentials"),
    *_area("/v1/alerts/rules*", "alert rules"),
    *_area("/v1/alerts*", "alerts and their delivery log"),
    # -- chat: open to anonymous callers, so any key may ask (its answer is an ad-hoc run,
    # kept apart from a brand's headline figures, #25 item 6)
    RoleRule(frozenset({"POST"}), "/v1/chat", Role.VIEWER, "ask the assistant"),
    # -- evidence ------------------------------------------------------------------------------
    RoleRule(READS, "/v1/evidence/{sha256}", Role.VIEWER, "your workspace's evidence"),
    # -- brands, ground truth and facts -------------------------------------------------------
    RoleRule(READS, "/v1/brands", Role.VIEWER),
    RoleRule(frozenset({"POST"}), "/v1/brands", Role.EDITOR, "track a brand"),
    RoleRule(READS, "/v1/brands/{brand_id}", Role.VIEWER),
    RoleRule(frozenset({"PATCH"}), "/v1/brands/{brand_id}", Role.EDITOR),
    RoleRule(READS, "/v1/brands/{brand_id}/ground-truth", Role.VIEWER),
    RoleRule(frozenset({"POST"}), "/v1/brands/{brand_id}/ground-truth/refresh", Role.EDITOR),
    RoleRule(frozenset({"POST"}), "/v1/brands/{brand_id}/ground-truth/facts", Role.EDITOR),
    RoleRule(frozenset({"POST"}), "/v1/brands/{brand_id}/reverify", Role.EDITOR),
    *_area("/v1/brands*", "brands"),
    # -- runs and their classifications --------------------------------------------------------
    RoleRule(READS, "/v1/runs", Role.VIEWER),
    RoleRule(frozenset({"POST"}), "/v1/runs", Role.EDITOR, "submit a run"),
    RoleRule(READS, "/v1/runs/{run_id}", Role.VIEWER),
    RoleRule(READS, "/v1/runs/{run_id}/classifications", Role.VIEWER),
    RoleRule(frozenset({"POST"}), "/v1/runs/{run_id}/reclassify", Role.EDITOR),
    *_area("/v1/runs*", "runs"),
    # -- metrics and exports (read only) --------------------------------------------------------
    *_area("/v1/metrics*", "metrics"),
    RoleRule(READS, "/v1/exports/*", Role.VIEWER, "exports are reads"),
    # -- collection: prompts, engines, engine secrets, schedules, collections ------------------
    *_area("/v1/prompts*", "prompts"),
    *_area("/v1/engines*", "engines"),
    *_area("/v1/secrets*", "engine secrets (write-only values; an engine's key)"),
    *_area("/v1/schedules*", "schedules"),
    RoleRule(READS, "/v1/collections*", Role.VIEWER, "collected samples and raw responses"),
    # -- review ------------------------------------------------------------------------------
    RoleRule(frozenset({"POST"}), "/v1/review/queue/{run_id}/{brand_id}/decision", Role.EDITOR,
             "record a person's class"),
    *_area("/v1/review*", "review"),
)


def required_role(method: str, template: str,
                  table: tuple[RoleRule, ...] = ROLE_TABLE) -> Role | None:
    """The least role route ``method template`` needs, or None when no rule covers it (the
    gateway then refuses it to every key)."""
    return next((rule.role for rule in table if rule.matches(method, template)), None)
