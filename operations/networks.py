"""Who may reach /healthz, /readyz and /metrics without the HTTPS redirect and host check: judged
by the socket's peer (REMOTE_ADDR as gunicorn sets it), never by X-Forwarded-For, which any client
can write."""

from django.http import HttpRequest

from plumbing.clientip import _networks, parse_address


def peer_in(request: HttpRequest, networks: list[str]) -> bool:
    peer = parse_address(request.META.get("REMOTE_ADDR", ""))
    return peer is not None and any(peer in network for network in _networks(tuple(networks)))
