"""SSRF-safe HTTP fetcher for brand ground-truth sources.

A source URL is user input, so a fetch must not become a way into private networks:
- only ``http``/``https`` URLs, no credentials in the URL;
- the host is resolved once and *every* resolved address is checked; loopback, private,
  link-local (cloud metadata 169.254.169.254 included), multicast, reserved, unspecified,
  shared (CGNAT) and other non-global addresses are refused, for IPv4 and IPv6 alike, with
  IPv4-mapped/compatible IPv6 (``::ffff:127.0.0.1``) and 6to4/Teredo unwrapped first; only an
  explicit allow-list (config ``ATTESTA_FETCH_ALLOW``) of ``address:port`` pairs lets such an
  address through, and only on the listed port: allowing a host's web port must not open its
  database or internal APIs. A refusal is decided before any connection, with the same reason
  whatever listens on the port, so refusals cannot be used to scan ports;
- the connection goes to the address that was checked (the URL is rewritten to the IP and the
  original host is sent as ``Host`` and as TLS SNI/hostname check), so no second DNS answer can
  slip in between check and connect (no rebinding window);
- redirects are followed by hand (``follow_redirects=False``), each hop re-checked the same way,
  at most ``max_redirects`` hops;
- the body is streamed and the fetch stops past ``max_bytes``; the whole fetch (all hops) has
  one deadline of ``timeout_s``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class FetchRefused(Exception):
    """The URL (or a redirect) points somewhere we must not go, or breaks a limit."""


class FetchFailed(Exception):
    """The target could not be fetched (DNS, connection, timeout, HTTP error status)."""


@dataclass(frozen=True)
class FetchedDocument:
    url: str  # the URL asked for
    final_url: str  # after redirects
    status: int
    content_type: str
    body: bytes


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
            raise ValueError(f"fetch allow-list entry {raw!r}: write ADDRESS[/PREFIX]:PORT, e.g. "
                             "127.0.0.1:8090 or [::1]:8090 (a port is required)") from None
        out.append(AllowedTarget(network, port))
    return tuple(out)


def _unwrap(ip: IPAddress) -> IPAddress:
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


def refusal_reason(ip: IPAddress, port: int, allow: tuple[AllowedTarget, ...] = ()) -> str | None:
    """Why ``ip``:``port`` may not be fetched, or None if it may. The reason names the address
    class only, never the port's state (nothing has connected yet)."""
    for candidate in {ip, _unwrap(ip)}:
        if any(entry.admits(candidate, port) for entry in allow):
            return None
    target = _unwrap(ip)
    checks = (("loopback", target.is_loopback), ("unspecified", target.is_unspecified),
              ("link-local (cloud metadata)", target.is_link_local),
              ("multicast", target.is_multicast), ("reserved", target.is_reserved),
              ("private", target.is_private))
    for name, hit in checks:
        if hit:
            return f"{name} address {ip}"
    if not target.is_global:  # shared/CGNAT 100.64/10, documentation ranges, ...
        return f"non-global address {ip}"
    return None


def _check_url(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchRefused(f"scheme {parts.scheme or '(none)'!r} refused: only http and https")
    if parts.username or parts.password:
        raise FetchRefused("credentials in the URL are refused")
    host = parts.hostname
    if not host:
        raise FetchRefused("URL has no host")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise FetchRefused("invalid port") from None
    return scheme, host, port


async def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise FetchFailed(f"cannot resolve {host}: {exc}") from None
    out: list[IPAddress] = []
    for *_, sockaddr in infos:
        ip = ipaddress.ip_address(sockaddr[0].split("%")[0])
        if ip not in out:
            out.append(ip)
    if not out:
        raise FetchFailed(f"{host} resolved to no address")
    return out


class SafeFetcher:
    def __init__(self, *, allow: tuple[AllowedTarget, ...] = (), max_bytes: int = 2_000_000,
                 timeout_s: float = 10.0, max_redirects: int = 5,
                 user_agent: str = "AttestaGroundTruth/1.0 (+https://attesta.example/bot)",
                 verify: bool | str = True) -> None:
        self.allow, self.max_bytes, self.timeout_s = allow, max_bytes, timeout_s
        self.max_redirects, self.user_agent, self.verify = max_redirects, user_agent, verify
        self._tls: ssl.SSLContext | None = None

    def _tls_context(self) -> ssl.SSLContext:
        """One TLS context per fetcher: loading the CA bundle costs tens of ms of CPU, too much
        to pay for every source of every refresh."""
        if self._tls is None:
            if isinstance(self.verify, str):
                self._tls = ssl.create_default_context(cafile=self.verify)
            else:
                self._tls = httpx.create_ssl_context(verify=self.verify)
        return self._tls

    async def _pinned(self, url: str) -> tuple[str, str, str]:
        """Check ``url`` and return (url rewritten to the checked IP, Host header, SNI host)."""
        scheme, host, port = _check_url(url)
        addresses = await _resolve(host, port)
        for ip in addresses:  # every answer must be allowed: no "pick the public one" games
            reason = refusal_reason(ip, port, self.allow)
            if reason is not None:
                raise FetchRefused(f"{host} -> {reason} refused (SSRF guard)")
        ip = addresses[0]
        parts = urlsplit(url)
        ip_text = f"[{ip}]" if ip.version == 6 else str(ip)
        default_port = 443 if scheme == "https" else 80
        netloc = ip_text if port == default_port else f"{ip_text}:{port}"
        host_header = host if port == default_port else f"{host}:{port}"
        if ":" in host and not host.startswith("["):
            host_header = f"[{host}]" if port == default_port else f"[{host}]:{port}"
        pinned = urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))
        return pinned, host_header, host

    async def fetch(self, url: str) -> FetchedDocument:
        try:
            async with asyncio.timeout(self.timeout_s):
                return await self._fetch(url)
        except TimeoutError:
            raise FetchFailed(f"timed out after {self.timeout_s:g}s") from None

    async def _fetch(self, url: str) -> FetchedDocument:
        current = url
        timeout = httpx.Timeout(self.timeout_s)
        async with httpx.AsyncClient(follow_redirects=False, timeout=timeout,
                                     verify=self._tls_context(), trust_env=False) as client:
            for hop in range(self.max_redirects + 1):
                pinned, host_header, sni = await self._pinned(current)
                request = client.build_request(
                    "GET", pinned,
                    headers={"Host": host_header, "User-Agent": self.user_agent,
                             "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"},
                    extensions={"sni_hostname": sni},
                )
                try:
                    response = await client.send(request, stream=True)
                except httpx.HTTPError as exc:
                    raise FetchFailed(f"{type(exc).__name__}: {exc}") from None
                try:
                    if response.status_code in (301, 302, 303, 307, 308):
                        location = response.headers.get("location")
                        if not location:
                            raise FetchFailed(f"redirect {response.status_code} without Location")
                        current = urljoin(current, location)
                        continue
                    body = bytearray()
                    declared = response.headers.get("content-length")
                    if declared and declared.isdigit() and int(declared) > self.max_bytes:
                        raise FetchRefused(f"document larger than {self.max_bytes} bytes "
                                           f"(Content-Length {declared})")
                    async for chunk in response.aiter_bytes():  # decoded: caps gzip bombs too
                        body += chunk
                        if len(body) > self.max_bytes:
                            raise FetchRefused(f"document larger than {self.max_bytes} bytes")
                    if response.status_code >= 400:
                        raise FetchFailed(f"HTTP {response.status_code}")
                    return FetchedDocument(url, current, response.status_code,
                                           response.headers.get("content-type", ""), bytes(body))
                except httpx.HTTPError as exc:
                    raise FetchFailed(f"{type(exc).__name__}: {exc}") from None
                finally:
                    await response.aclose()
        raise FetchRefused(f"more than {self.max_redirects} redirects")
