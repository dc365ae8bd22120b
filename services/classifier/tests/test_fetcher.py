"""The SSRF guard of the ground-truth fetcher against a real HTTP server on 127.0.0.1 (the
shared policy's own rules are tested in libs/platform/tests/test_outbound.py)."""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from attesta_classifier.adapters.fetcher import FetchFailed, FetchRefused, SafeFetcher
from attesta_platform.outbound import OutboundPolicy

pytestmark = pytest.mark.unit  # a local HTTP server only


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        return

    def _send(self, status: int, body: bytes = b"", headers: dict | None = None, length: bool = True) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        p = self.path
        if p == "/ok":
            self._send(200, f"<h1>host={self.headers.get('Host')}</h1>".encode(), {"Content-Type": "text/html"})
        elif p == "/meta":
            self._send(302, headers={"Location": "http://169.254.169.254/latest/meta-data"})
        elif p == "/meta6":
            self._send(302, headers={"Location": "http://[::ffff:169.254.169.254]/"})
        elif p == "/loop":
            self._send(302, headers={"Location": "/loop"})
        elif p == "/to-file":
            self._send(302, headers={"Location": "file:///etc/passwd"})
        elif p == "/hop":
            self._send(301, headers={"Location": "/ok"})
        elif p == "/big":
            self._send(200, b"x" * 300_000, {"Content-Type": "text/html"})
        elif p == "/big-unannounced":  # no Content-Length: the stream must be cut
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            for _ in range(40):
                self.wfile.write(b"y" * 10_000)
        elif p == "/gzip-bomb":
            self._send(200, gzip.compress(b"z" * 5_000_000),
                       {"Content-Type": "text/html", "Content-Encoding": "gzip"})
        elif p == "/slow":
            time.sleep(2.0)
            self._send(200, b"late")
        elif p == "/missing":
            self._send(404, b"no")
        else:
            self._send(500, b"?")


@pytest.fixture(scope="module")
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def allowed(server: str, **kw) -> SafeFetcher:
    """A fetcher allowed to reach the test server's loopback port (and no other)."""
    port = server.rsplit(":", 1)[1]
    return SafeFetcher(OutboundPolicy.from_setting(f"127.0.0.1:{port}"),
                       **({"timeout_s": 5.0} | kw))


async def test_loopback_refused_without_allow_list(server):
    with pytest.raises(FetchRefused, match="loopback"):
        await SafeFetcher().fetch(f"{server}/ok")
    with pytest.raises(FetchRefused, match="loopback"):
        await SafeFetcher().fetch(server.replace("127.0.0.1", "localhost") + "/ok")


async def test_allow_listed_fetch_connects_to_checked_ip_with_original_host(server):
    port = server.rsplit(":", 1)[1]
    doc = await allowed(server).fetch(f"http://localhost:{port}/hop")
    assert doc.status == 200 and doc.final_url.endswith("/ok")
    # Pinned: the socket went to 127.0.0.1, the Host header still names what was asked for.
    assert f"host=localhost:{port}".encode() in doc.body


async def test_redirect_to_metadata_refused_even_with_loopback_allowed(server):
    with pytest.raises(FetchRefused, match="169.254.169.254"):
        await allowed(server).fetch(f"{server}/meta")
    with pytest.raises(FetchRefused, match="169.254.169.254"):
        await allowed(server).fetch(f"{server}/meta6")


async def test_redirect_loop_and_limit(server):
    with pytest.raises(FetchRefused, match="more than 3 redirects"):
        await allowed(server, max_redirects=3).fetch(f"{server}/loop")
    with pytest.raises(FetchRefused, match="more than 0 redirects"):
        await allowed(server, max_redirects=0).fetch(f"{server}/hop")


async def test_redirect_to_non_http_scheme_refused(server):
    with pytest.raises(FetchRefused, match="scheme 'file'"):
        await allowed(server).fetch(f"{server}/to-file")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://127.0.0.1:70/",
                                 "javascript:alert(1)", "//example.com/x"])
async def test_non_http_schemes_refused(url):
    with pytest.raises(FetchRefused, match="scheme"):
        await SafeFetcher().fetch(url)


async def test_credentials_in_url_refused():
    with pytest.raises(FetchRefused, match="credentials"):
        await SafeFetcher().fetch("http://user:pw@example.com/")


async def test_size_cap(server):
    with pytest.raises(FetchRefused, match="larger than 100000"):
        await allowed(server, max_bytes=100_000).fetch(f"{server}/big")
    with pytest.raises(FetchRefused, match="larger than 100000"):
        await allowed(server, max_bytes=100_000).fetch(f"{server}/big-unannounced")
    with pytest.raises(FetchRefused, match="larger than 100000"):  # decoded size counts
        await allowed(server, max_bytes=100_000).fetch(f"{server}/gzip-bomb")
    doc = await allowed(server, max_bytes=400_000).fetch(f"{server}/big")
    assert len(doc.body) == 300_000


async def test_timeout(server):
    t0 = time.monotonic()
    with pytest.raises(FetchFailed, match="timed out"):
        await allowed(server, timeout_s=0.5).fetch(f"{server}/slow")
    assert time.monotonic() - t0 < 1.9


async def test_http_error_status(server):
    with pytest.raises(FetchFailed, match="HTTP 404"):
        await allowed(server).fetch(f"{server}/missing")


@pytest.mark.parametrize("url,reason", [
    ("http://[::1]:8081/", "loopback"),
    ("http://[::ffff:127.0.0.1]:8081/", "loopback"),
    ("http://[::ffff:a9fe:a9fe]/", "link-local"),  # ::ffff:169.254.169.254
    ("http://[fe80::1]/", "link-local"),
    ("http://[fd00:ec2::254]/", "private"),  # AWS IPv6 metadata
    ("http://10.1.2.3/", "private"),
    ("http://192.168.0.1/", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://100.64.0.1/", "non-global"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://[2002:7f00:1::]/", "loopback"),  # 6to4 wrapping 127.0.0.1
    ("http://2130706433/", "loopback"),  # 127.0.0.1 as one decimal number
])
async def test_private_and_special_addresses_refused(url, reason):
    with pytest.raises(FetchRefused, match=reason):
        await SafeFetcher().fetch(url)


async def test_refusals_read_the_same_for_open_and_closed_ports(server):
    """Allowing the sites' port must not open the host's other ports, and the refusal of an open
    port (the test server itself, seen through a fetcher allowed only another port) must read
    exactly like the refusal of a closed one: no port scanning through refusal reasons."""
    import socket

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connection refused if reached
    closed_port = closed.getsockname()[1]
    open_port = int(server.rsplit(":", 1)[1])
    only_other = SafeFetcher(OutboundPolicy.from_setting(f"127.0.0.1:{closed_port + 1}"),
                             timeout_s=5)
    reasons = []
    for port in (open_port, closed_port):
        with pytest.raises(FetchRefused) as refused:
            await only_other.fetch(f"http://127.0.0.1:{port}/ok")
        reasons.append(str(refused.value))
    closed.close()
    assert reasons[0] == reasons[1] == "127.0.0.1 -> loopback address 127.0.0.1 refused (SSRF guard)"
