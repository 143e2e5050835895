"""Read settings from the environment, failing loudly on values that make no sense."""

import ipaddress
import os
import re

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be 0 or 1 (got {raw!r})")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number (got {raw!r})") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum} (got {value})")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


_RATE_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600}
_RATE_RE = re.compile(r"(\d+)/(\d*)([smh]?)", re.ASCII)


def env_rate(name: str, default: str) -> tuple[int, int]:
    """A limit written COUNT/PERIOD, as (count, seconds): `20/m`, `10/5m`, `600/60s`, `30/90`."""
    raw = os.environ.get(name)
    text = default if raw is None or raw.strip() == "" else raw.strip().lower()
    match = _RATE_RE.fullmatch(text)
    if match is None or not (match[2] or match[3]):
        raise ImproperlyConfigured(f"{name} must look like 20/m, 10/5m or 600/60s (got {raw!r})")
    count, period = int(match[1]), int(match[2] or 1) * _RATE_UNITS[match[3]]
    if count < 1 or period < 1:
        raise ImproperlyConfigured(f"{name} needs a count and a period of at least 1 (got {raw!r})")
    return count, period


def env_networks(name: str) -> list[str]:
    """A comma list of IP addresses or CIDR networks, normalised (`10.0.0.0/8`, `2001:db8::/32`)."""
    networks = []
    for item in env_list(name, []):
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {item!r} is not an IP address or network") from None
    return networks
