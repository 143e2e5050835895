import pytest
from django.test import RequestFactory

from plumbing.clientip import client_address, parse_address

PROXY = "10.0.0.2"


def address(remote_addr: str, forwarded: str | None = None) -> str:
    extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    return client_address(RequestFactory().get("/", REMOTE_ADDR=remote_addr, **extra))


@pytest.fixture
def behind_proxy(settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/24", "2001:db8:ff::/48"]


def test_it_uses_the_peer_address_by_default():
    assert address("198.51.100.7") == "198.51.100.7"


def test_it_ignores_x_forwarded_for_when_no_proxy_is_configured(settings):
    settings.TRUSTED_PROXIES = []
    assert address("198.51.100.7", "203.0.113.9") == "198.51.100.7"


def test_it_ignores_x_forwarded_for_from_a_peer_that_is_not_a_trusted_proxy(behind_proxy):
    assert address("198.51.100.7", "203.0.113.9") == "198.51.100.7"


def test_it_takes_the_client_from_a_trusted_proxy(behind_proxy):
    assert address(PROXY, "203.0.113.9") == "203.0.113.9"


def test_it_ignores_a_spoofed_left_most_entry(behind_proxy):
    # The client sent "X-Forwarded-For: 192.0.2.1"; the proxy appended the address it saw.
    assert address(PROXY, "192.0.2.1, 203.0.113.9") == "203.0.113.9"


def test_it_skips_trusted_proxies_in_a_chain(behind_proxy):
    assert address(PROXY, "192.0.2.1, 203.0.113.9, 10.0.0.7, 10.0.0.3") == "203.0.113.9"


def test_it_takes_the_left_most_entry_when_every_hop_is_a_trusted_proxy(behind_proxy):
    assert address(PROXY, "10.0.0.9, 10.0.0.3") == "10.0.0.9"


def test_it_keeps_the_proxy_address_when_the_header_is_missing_or_empty(behind_proxy):
    assert address(PROXY) == PROXY
    assert address(PROXY, "") == PROXY


def test_it_stops_at_an_entry_that_is_not_an_address(behind_proxy):
    # Reading past "unknown" would let the client choose its own address.
    assert address(PROXY, "192.0.2.1, unknown") == PROXY
    assert address(PROXY, "192.0.2.1, unknown, 10.0.0.5") == "10.0.0.5"


def test_it_reads_ports_brackets_and_ipv6(behind_proxy):
    assert address(PROXY, "203.0.113.9:51234") == "203.0.113.9"
    assert address(PROXY, "[2001:db8::1]:443") == "2001:db8::1"
    assert address("2001:db8:ff::1", "2001:db8:1::5") == "2001:db8:1::5"


def test_it_treats_an_ipv4_mapped_ipv6_peer_as_ipv4(behind_proxy):
    assert address("::ffff:10.0.0.2", "203.0.113.9") == "203.0.113.9"
    assert address("::ffff:198.51.100.7") == "198.51.100.7"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("203.0.113.9", "203.0.113.9"),
        (" 203.0.113.9 ", "203.0.113.9"),
        ("203.0.113.9:80", "203.0.113.9"),
        ("[2001:db8::1]", "2001:db8::1"),
        ("2001:db8::1", "2001:db8::1"),
        ("203.0.113.9:http", None),
        ("[2001:db8::1]x", None),
        ("unknown", None),
        ("", None),
        ("999.1.1.1", None),
    ],
)
def test_parse_address(text, expected):
    parsed = parse_address(text)
    assert (str(parsed) if parsed else None) == expected
