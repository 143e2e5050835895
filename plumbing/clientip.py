"""The address a request comes from, for rate limiting (SECURITY.md, token endpoint).

REMOTE_ADDR is the peer that opened the connection. X-Forwarded-For is whatever the client
wrote, plus one address appended by each proxy on the way, so it is believed only when the
deployment names its proxies (DJANGO_TRUSTED_PROXIES) and the peer is one of them. Read from
the right, every entry written by a trusted proxy is trustworthy; the first that is not itself a
trusted proxy is the client. Everything to its left is the client's own invention.
"""

import ipaddress
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def ip_networks(networks: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    """Addresses and networks as settings write them (`10.0.0.0/8`, `192.0.2.10`), parsed once per
    process: the trusted proxies here, the health and metrics networks (operations.networks)."""
    return tuple(ipaddress.ip_network(network, strict=False) for network in networks)


def parse_address(text: str) -> IPAddress | None:
    """An address as servers and proxies write it: bare, `203.0.113.7:port`, `[2001:db8::1]:port`.

    IPv4-mapped IPv6 (`::ffff:203.0.113.7`) comes back as IPv4, so one client has one address.
    """
    text = text.strip()
    if text.startswith("["):
        text, _, port = text[1:].partition("]")
        if port and not (port.startswith(":") and port[1:].isdigit()):
            return None
    elif text.count(":") == 1:
        text, _, port = text.partition(":")
        if not port.isdigit():
            return None
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _is_trusted_proxy(address: IPAddress, proxies: tuple[IPNetwork, ...]) -> bool:
    return any(address in network for network in proxies)


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR, or from a trusted proxy the right-most X-Forwarded-For entry it did not write."""
    peer_text = request.META.get("REMOTE_ADDR", "")
    peer = parse_address(peer_text)
    if peer is None:
        return peer_text
    proxies = ip_networks(tuple(settings.TRUSTED_PROXIES))
    client = peer
    if not _is_trusted_proxy(peer, proxies):
        return str(client)
    for hop in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        address = parse_address(hop)
        if address is None:
            # A trusted proxy wrote something that is no address (or nothing at all): stop at
            # the last hop that can be vouched for rather than read further left.
            break
        client = address
        if not _is_trusted_proxy(address, proxies):
            break
    # If every entry is a trusted proxy, the request started inside: the left-most one is it.
    return str(client)
