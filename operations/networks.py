"""Who may reach /healthz, /readyz and /metrics without the HTTPS redirect and host check: judged
by the socket's peer (REMOTE_ADDR as gunicorn sets it), never by X-Forwarded-For, which any client
can write.

A request a proxy relayed is never the peer's own, whatever the peer's address: behind a proxy on
the same host (nginx or HAProxy on loopback in front of gunicorn, the usual layout) every
stranger's request arrives from loopback. A proxy marks what it relays (docs/deploying.md asks for
X-Forwarded-For and X-Forwarded-Proto; docs/haproxy.cfg's `option forwardfor`), and a prober or a
scraper beside the server sends none of these headers (HAProxy's and Kubernetes' checks do not
either). Their presence can only take a request out of the networks, never put one in: a client
that writes them shuts itself out.
"""

from django.http import HttpRequest

from plumbing.clientip import ip_networks, parse_address

RELAYED = (
    "HTTP_X_FORWARDED_FOR",
    "HTTP_FORWARDED",
    "HTTP_X_FORWARDED_PROTO",
    "HTTP_X_FORWARDED_HOST",
    "HTTP_X_REAL_IP",
)


def peer_in(request: HttpRequest, networks: list[str]) -> bool:
    meta = request.META
    if any(header in meta for header in RELAYED):
        return False
    peer = parse_address(meta.get("REMOTE_ADDR", ""))
    return peer is not None and any(peer in network for network in ip_networks(tuple(networks)))
