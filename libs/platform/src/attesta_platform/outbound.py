"""One outbound-request policy for every request the system sends on a tenant's behalf.

A URL a tenant gives us (a brand's ground-truth source, an engine's endpoint, a webhook) must
not become a way into private networks (SSRF). Every client that sends such a request asks
this module first:

- **the URL's shape** (``check_url``): ``http``/``https`` only; no userinfo (``u:p@``); a
  host (``http:///x`` has none); a valid port; a host name of letters, digits, ``-``, ``.``
  and ``_`` only (so no two URL parsers can read it differently); an IPv6 literal without a
  zone; and IPv4 only as four decimal numbers: ``2130706433``, ``0177.0.0.1``, ``0x7f.1`` and
  ``127.1`` all mean 127.0.0.1 to the C resolver and are refused as spellings;
- **every address** the host is or resolves to (``OutboundPolicy.resolve``): loopback,
  private, link-local (cloud metadata 169.254.169.254 included), multicast, reserved,
  unspecified, shared (CGNAT) and other non-global addresses are refused, IPv4 and IPv6 alike,
  IPv4-mapped/compatible (``::ffff:127.0.0.1``), 6to4 and Teredo forms unwrapped first. One
  bad answer refuses the host: no "pick the public one" games;
- **the operator's allow-list** (``ATTESTA_FETCH_ALLOW``, comma-separated
  ``ADDRESS[/PREFIX]:PORT``) is the only exception, and only on the listed port: allowing a
  host's web port must not open its database or internal APIs;
- a refusal is decided **before any connection**, and its text depends on the address class
  only, so refusals cannot tell an open port from a closed one;
- the client then **connects to the checked address** (``pin`` for clients that take a URL;
  the collector's aiohttp client resolves through ``resolve`` instead), so no second DNS answer
  can slip in between check and connect.

Redirects are the client's business: it either does not follow them or checks every hop here.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOW_SETTING = "ATTESTA_FETCH_ALLOW"
_HOST_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_.-]{0,251}[a-z0-9_.])?$")
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


class OutboundRefused(Exception):
    """The URL, or an address its host is or resolves to, is not one we may send a request to.

    ``str()`` is the operator's detail (host and address); ``public_reason`` is what a tenant
    may read: the URL problem or the address class, never a resolved address or a port's state.
    """

    def __init__(self, detail: str, public_reason: str | None = None) -> None:
        super().__init__(detail)
        self.public_reason = public_reason or detail


class HostUnresolved(Exception):
    """The host name has no address now (or the resolver did not answer in time)."""


@dataclass(frozen=True)
class AllowedTarget:
    """One allow-list entry: the addresses of ``network`` on TCP ``port`` only."""

    network: Network
    port: int

    def admits(self, ip: IPAddress, port: int) -> bool:
        return port == self.port and ip.version == self.network.version and ip in self.network


def parse_allow_list(spec: str | Iterable[str]) -> tuple[AllowedTarget, ...]:
    """``ATTESTA_FETCH_ALLOW``: comma-separated ``ADDRESS[/PREFIX]:PORT`` entries, IPv6 in
    brackets (``127.0.0.1:8090``, ``10.0.0.0/8:443``, ``[::1]:8090``). An entry without a port is
    an error (ValueError): a whole address is never allowed."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[AllowedTarget] = []
    for raw in (i.strip() for i in items):
        if not raw:
            continue
        if raw.startswith("["):
            host, _, rest = raw[1:].partition("]")
            port_text = rest[1:] if rest.startswith(":") else ""
        else:
            host, _, port_text = raw.rpartition(":")
        try:
            network = ipaddress.ip_network(host, strict=False)
            port = int(port_text)
            if not 0 < port < 65536:
                raise ValueError
        except ValueError:
            raise ValueError(f"{ALLOW_SETTING} entry {raw!r}: write ADDRESS[/PREFIX]:PORT, e.g. "
                             "127.0.0.1:8090 or [::1]:8090 (a port is required)") from None
        out.append(AllowedTarget(network, port))
    return tuple(out)


def unwrap(ip: IPAddress) -> IPAddress:
    """The IPv4 address inside an IPv4-mapped, IPv4-compatible, 6to4 or Teredo IPv6 address."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip.teredo is not None:
            return ip.teredo[1]
        # IPv4-compatible (deprecated) ::a.b.c.d
        if int(ip) >> 32 == 0 and int(ip) > 1:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def address_class(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public address ("loopback", "private", ...), or None if it is."""
    target = unwrap(ip)
    checks = (("loopback", target.is_loopback), ("unspecified", target.is_unspecified),
              ("link-local (cloud metadata)", target.is_link_local),
              ("multicast", target.is_multicast), ("reserved", target.is_reserved),
              ("private", target.is_private))
    for name, hit in checks:
        if hit:
            return name
    if not target.is_global:  # shared/CGNAT 100.64/10, documentation ranges, ...
        return "non-global"
    return None


def refusal_reason(ip: IPAddress, port: int, allow: tuple[AllowedTarget, ...] = ()) -> str | None:
    """Why ``ip``:``port`` may not be reached, or None if it may. The reason names the address
    class only, never the port's state (nothing has connected yet)."""
    for candidate in {ip, unwrap(ip)}:
        if any(entry.admits(candidate, port) for entry in allow):
            return None
    name = address_class(ip)
    return None if name is None else f"{name} address {ip}"


@dataclass(frozen=True)
class Target:
    """What a URL that passed ``check_url`` asks to reach."""

    scheme: str
    host: str  # lower case; an IPv6 literal without its brackets
    port: int
    address: IPAddress | None  # the host itself when it is an IP literal

    @property
    def default_port(self) -> bool:
        return self.port == (443 if self.scheme == "https" else 80)


def _numeric_ipv4(host: str) -> IPAddress | None:
    """The address a numeric IPv4 spelling means to the C resolver, for the refusal's detail."""
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def check_url(url: str) -> Target:
    """The URL's shape (see the module docstring); ``OutboundRefused`` when it is not one we
    send requests to. Nothing is resolved or connected."""
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise OutboundRefused("the URL contains spaces or control characters")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise OutboundRefused(f"scheme {parts.scheme or '(none)'!r} refused: only http and https")
    if "@" in parts.netloc:
        raise OutboundRefused("credentials in the URL are refused (no user:password@)")
    host = parts.hostname or ""
    if not host:
        raise OutboundRefused("the URL has no host")
    try:
        given = parts.port
    except ValueError:
        given = 0
    if given == 0 and parts.netloc.rpartition("]")[2].rpartition(":")[1]:
        raise OutboundRefused("the URL's port is not a number from 1 to 65535")
    port = given or (443 if scheme == "https" else 80)
    if ":" in host:  # an IPv6 literal (urlsplit took the brackets off)
        try:
            if "%" in host:  # a zone id names an interface of ours, not an address
                raise ValueError
            address: IPAddress = ipaddress.IPv6Address(host)
        except ValueError:
            raise OutboundRefused("the URL's IPv6 address is not valid (no zone ids)") from None
        return Target(scheme, host, port, address)
    labels = host.removesuffix(".").split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):  # WHATWG: a host ending in a number is IPv4
        try:
            address = ipaddress.IPv4Address(host)
        except ValueError:
            meant = _numeric_ipv4(host.removesuffix("."))
            detail = f"{host} -> non-canonical IPv4 spelling" + (
                f" of {address_class(meant) or 'public'} address {meant}" if meant else "")
            raise OutboundRefused(
                f"{detail} refused (SSRF guard)",
                "a non-canonical IPv4 address is refused: write it as four decimal numbers "
                "(a.b.c.d)") from None
        return Target(scheme, host, port, address)
    if not _HOST_NAME.fullmatch(host):
        raise OutboundRefused("the URL's host name may only have letters, digits, '-', '.' and "
                              "'_' (write an international name in its xn-- form)")
    return Target(scheme, host, port, None)


@dataclass(frozen=True)
class PinnedRequest:
    """A checked URL rewritten to the checked address, for clients that take a URL: send it with
    ``host_header`` as Host and ``server_name`` as TLS SNI and certificate name."""

    url: str
    host_header: str
    server_name: str
    address: IPAddress


@dataclass(frozen=True)
class OutboundPolicy:
    """The checks for one process: the module's rules plus the operator's allow-list."""

    allow: tuple[AllowedTarget, ...] = ()
    resolve_timeout_s: float = 5.0

    @classmethod
    def from_setting(cls, spec: str) -> OutboundPolicy:
        return cls(parse_allow_list(spec))

    def check_address(self, host: str, ip: IPAddress, port: int) -> None:
        reason = refusal_reason(ip, port, self.allow)
        if reason is not None:
            name = address_class(ip) or "non-global"
            raise OutboundRefused(f"{host} -> {reason} refused (SSRF guard)",
                                  f"{name} address refused by the outbound policy")

    def precheck(self, url: str) -> Target:
        """The checks that need no DNS: the URL's shape, and its address when the host is an IP
        literal."""
        target = check_url(url)
        if target.address is not None:
            self.check_address(target.host, target.address, target.port)
        return target

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        """Every address of ``host``, each one checked; ``OutboundRefused`` if any is refused,
        ``HostUnresolved`` if there is none."""
        try:
            literal: IPAddress | None = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            literal = None
        if literal is not None:
            self.check_address(host, literal, port)
            return [literal]
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.resolve_timeout_s):
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except TimeoutError:
            raise HostUnresolved(f"cannot resolve {host}: no answer within "
                                 f"{self.resolve_timeout_s:g} s") from None
        except (socket.gaierror, UnicodeError) as exc:
            raise HostUnresolved(f"cannot resolve {host}: {exc}") from None
        out: list[IPAddress] = []
        for *_, sockaddr in infos:
            ip = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
            if ip not in out:
                out.append(ip)
        if not out:
            raise HostUnresolved(f"{host} resolved to no address")
        for ip in out:
            self.check_address(host, ip, port)
        return out

    async def check(self, url: str) -> tuple[Target, list[IPAddress]]:
        """Everything: the URL's shape, then every address its host resolves to."""
        target = self.precheck(url)
        return target, await self.resolve(target.host, target.port)

    async def pin(self, url: str) -> PinnedRequest:
        """Check ``url`` and rewrite it to the first checked address."""
        target, addresses = await self.check(url)
        ip = addresses[0]
        parts = urlsplit(url)
        ip_text = f"[{ip}]" if ip.version == 6 else str(ip)
        host_text = f"[{target.host}]" if ":" in target.host else target.host
        netloc = ip_text if target.default_port else f"{ip_text}:{target.port}"
        host_header = host_text if target.default_port else f"{host_text}:{target.port}"
        pinned = urlunsplit((target.scheme, netloc, parts.path or "/", parts.query, ""))
        return PinnedRequest(pinned, host_header, target.host, ip)
