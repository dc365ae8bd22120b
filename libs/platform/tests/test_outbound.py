"""The one outbound-request policy (attesta_platform.outbound): URL shapes, address classes,
the operator's allow-list and pinning. Pure: nothing connects (localhost resolves from the
hosts file)."""

from __future__ import annotations

import ipaddress

import pytest

from attesta_platform.outbound import (
    OutboundPolicy,
    OutboundRefused,
    check_url,
    parse_allow_list,
    refusal_reason,
)
from attesta_platform.settings import ServiceSettings

pytestmark = pytest.mark.unit


def test_refusal_reason_allow_list_is_exact_in_address_and_port():
    allow = parse_allow_list("127.0.0.1:8090, [::1]:8443, 10.0.0.0/8:443")
    ip = ipaddress.ip_address
    assert refusal_reason(ip("127.0.0.1"), 8090, allow) is None
    assert refusal_reason(ip("127.0.0.1"), 8081, allow) is not None  # same host, other port
    assert refusal_reason(ip("127.0.0.2"), 8090, allow) is not None
    assert refusal_reason(ip("::ffff:127.0.0.1"), 8090, allow) is None  # mapped form unwrapped
    assert refusal_reason(ip("::1"), 8443, allow) is None
    assert refusal_reason(ip("::1"), 8090, allow) is not None
    assert refusal_reason(ip("10.1.2.3"), 443, allow) is None
    assert refusal_reason(ip("10.1.2.3"), 5432, allow) is not None
    assert refusal_reason(ip("93.184.216.34"), 443) is None


@pytest.mark.parametrize("entry", ["127.0.0.1/32", "127.0.0.1", "::1", "[::1]", "127.0.0.1:0",
                                   "127.0.0.1:99999", "localhost:8090", "127.0.0.1:http"])
def test_allow_list_entries_must_name_an_address_and_a_port(entry):
    with pytest.raises(ValueError, match="PORT"):
        parse_allow_list(entry)


def test_one_allow_list_setting_for_every_service_refuses_a_bad_entry(monkeypatch):
    monkeypatch.setenv("ATTESTA_FETCH_ALLOW", "127.0.0.1:8090,[::1]:8095")
    policy = ServiceSettings().outbound_policy()
    assert [(str(a.network), a.port) for a in policy.allow] == [("127.0.0.1/32", 8090),
                                                                 ("::1/128", 8095)]
    monkeypatch.setenv("ATTESTA_FETCH_ALLOW", "127.0.0.1")
    with pytest.raises(ValueError, match="ADDRESS"):
        ServiceSettings()


@pytest.mark.parametrize("url,public", [
    ("ftp://example.com/", "scheme"),
    ("//example.com/x", "scheme"),
    ("javascript:alert(1)", "scheme"),
    ("http://u:p@example.com/", "credentials"),
    ("http://@example.com/", "credentials"),
    ("http://evil.example\\@127.0.0.1/", "credentials"),
    ("http:///x", "no host"),
    ("http://example.com:0/", "port"),
    ("http://example.com:99999/", "port"),
    ("http://example.com:x/", "port"),
    ("http://[fe80::1%25eth0]/", "IPv6"),
    ("http://exa mple.com/", "spaces"),
    ("http://example.com/\r\nX: y", "control"),
    ("http://bad!host.example/", "letters, digits"),
    # IPv4 spellings the C resolver reads as 127.0.0.1: refused as spellings, whatever they mean
    ("http://2130706433/", "non-canonical"),
    ("http://0177.0.0.1/", "non-canonical"),
    ("http://0x7f.1/", "non-canonical"),
    ("http://0x7f000001/", "non-canonical"),
    ("http://127.1/", "non-canonical"),
    ("http://127.0.0.1./", "non-canonical"),
    ("http://example.0x7f/", "non-canonical"),
    ("http://08.8.8.8/", "non-canonical"),
])
def test_url_shapes_refused_before_any_lookup(url, public):
    with pytest.raises(OutboundRefused) as refused:
        check_url(url)
    assert public in refused.value.public_reason


def test_numeric_spellings_say_what_they_mean_to_the_operator_only():
    with pytest.raises(OutboundRefused) as refused:
        check_url("http://0x7f.1:8081/")
    assert "loopback address 127.0.0.1" in str(refused.value)
    assert "127.0.0.1" not in refused.value.public_reason


@pytest.mark.parametrize("url,klass", [
    ("http://127.0.0.1:8081/", "loopback"),
    ("http://[::1]:8082/", "loopback"),
    ("http://[::ffff:127.0.0.1]:8085/", "loopback"),
    ("http://[::ffff:a9fe:a9fe]/", "link-local"),
    ("http://169.254.169.254/latest/meta-data", "link-local"),
    ("http://[fd00:ec2::254]/", "private"),
    ("http://10.1.2.3/", "private"),
    ("http://100.64.0.1/", "non-global"),
    ("http://0.0.0.0:8085/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://[2002:7f00:1::]/", "loopback"),  # 6to4 wrapping 127.0.0.1
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "loopback"),  # Teredo, client 127.0.0.1
    ("http://[::127.0.0.1]/", "loopback"),  # IPv4-compatible
])
def test_ip_literals_refused_without_dns_naming_only_the_class(url, klass):
    with pytest.raises(OutboundRefused) as refused:
        OutboundPolicy().precheck(url)
    assert refused.value.public_reason == (
        f"{refused.value.public_reason.split(' address')[0]} address refused by the outbound "
        "policy")
    assert klass in refused.value.public_reason
    assert "8081" not in refused.value.public_reason


async def test_names_are_resolved_and_every_address_checked():
    with pytest.raises(OutboundRefused, match="loopback") as refused:
        await OutboundPolicy().check("http://localhost:8085/v1")
    assert refused.value.public_reason == "loopback address refused by the outbound policy"


def test_refusal_reads_the_same_for_any_port_of_a_refused_address():
    reasons = set()
    for port in (8081, 8082, 8085, 5432, 6379, 1):
        with pytest.raises(OutboundRefused) as refused:
            OutboundPolicy().precheck(f"http://127.0.0.1:{port}/x")
        reasons.add(refused.value.public_reason)
    assert reasons == {"loopback address refused by the outbound policy"}


async def test_the_allow_list_admits_its_address_and_port_only_and_pin_keeps_the_host():
    policy = OutboundPolicy.from_setting("127.0.0.1:8095")
    pinned = await policy.pin("http://localhost:8095/v1/chat?x=1")
    assert (pinned.url, pinned.host_header, pinned.server_name) == (
        "http://127.0.0.1:8095/v1/chat?x=1", "localhost:8095", "localhost")
    assert policy.precheck("http://127.0.0.1:8095/v1").address == ipaddress.ip_address("127.0.0.1")
    with pytest.raises(OutboundRefused):
        policy.precheck("http://127.0.0.1:8096/v1")
    with pytest.raises(OutboundRefused):  # localhost is also ::1 on most hosts; not allowed
        await OutboundPolicy.from_setting("[::1]:9").check("http://localhost:8095/")


def test_public_addresses_and_names_pass_the_static_checks():
    assert OutboundPolicy().precheck("https://93.184.216.34/v1").port == 443
    target = OutboundPolicy().precheck("https://API.Example.com./v1")
    assert (target.host, target.address, target.default_port) == ("api.example.com.", None, True)
