"""SSRF-safe HTTP fetcher for brand ground-truth sources.

A source URL is user input: every URL, and every redirect hop, goes through the system's one
outbound policy (``attesta_platform.outbound``: http(s) only, no userinfo, every resolved
address checked, only the operator's ``ATTESTA_FETCH_ALLOW`` address:port pairs as exceptions,
refusals decided before connecting). Here:
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
import ssl
from urllib.parse import urljoin

import httpx

from attesta_classifier.service_layer.ground_truth import FetchedDocument, FetchFailed
from attesta_platform.outbound import HostUnresolved, OutboundPolicy, OutboundRefused

# A refusal by the outbound policy is the fetcher's refusal too (one exception, one meaning).
FetchRefused = OutboundRefused


class SafeFetcher:
    def __init__(self, policy: OutboundPolicy | None = None, *, max_bytes: int = 2_000_000,
                 timeout_s: float = 10.0, max_redirects: int = 5,
                 user_agent: str = "AttestaGroundTruth/1.0 (+https://attesta.example/bot)",
                 verify: bool | str = True) -> None:
        self.policy = policy or OutboundPolicy()
        self.max_bytes, self.timeout_s = max_bytes, timeout_s
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
                try:
                    pinned = await self.policy.pin(current)
                except HostUnresolved as exc:
                    raise FetchFailed(str(exc)) from None
                request = client.build_request(
                    "GET", pinned.url,
                    headers={"Host": pinned.host_header, "User-Agent": self.user_agent,
                             "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"},
                    extensions={"sni_hostname": pinned.server_name},
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
