"""Rate limits on the OAuth endpoints and on the login, second-factor and consent forms (SECURITY.md, token endpoint).

`ROUTES` maps each path to its limits. A limit counts POSTs per one thing (the client's address,
the client_id, the username typed, the logged-in user) in fixed-length windows kept in Django's
cache (`cache.add` + `cache.incr`, both atomic), so server processes share counts when the cache
is Redis (REDIS_URL). There are three kinds:

- request limits count every POST, before the view runs;
- failure limits count a POST once its response shows that it failed, and refuse the next ones
  while the window's count is at the limit. Successful requests are never counted;
- attempt limits guard what can be guessed (a second factor's 6-digit code): every POST is counted
  before the view, in the shared store, and given back once its response shows that it succeeded.
  A window at its limit refuses the next attempt in every process at once, the right code
  included, and requests in flight cannot overshoot it (`Limit.attempts`).

A limit keyed by a client_id, which is public, counts only failed client authentications (a
wrong secret, an unknown client) and gives its verdict after the view (`Limit.judged_after`): past
the limit, a request that failed to authenticate gets the 429 in place of its 401, and a request
with the client's right secret is answered as if the limit did not exist. Strangers can fill such a
window, so it may refuse only strangers (SECURITY.md: client secrets cannot be guessed; the
per-address limits still slow any one source before the view).

Over a limit the answer is 429 with Retry-After, given in `process_view`: after the session and
user middleware (the consent limit is per user), before CSRF and before the view, so a refused
request costs no password hash, no secret digest and no token-table query. The per-client limits
are the exception above: their refusal costs what a failed authentication costs (one digest, one
query), the same for an unknown client and a wrong secret.

With the counters in PostgreSQL (plumbing.countercache, no Redis) each process keeps a `Ledger` of
what the database last told it, so that a successful request usually costs no statement:

- a request limit's requests are added in batches: a process writes when it has counted
  `batch` requests of its own since its last write, where `batch` is an eighth of the headroom
  the window had then (at most MAX_BATCH, at least 1: near the limit every request is written),
  so that up to eight processes together cannot pass the limit unseen;
- a failure limit is written once per failure (the failure's own statement, after the view), and
  the count that statement returns tells the process when the window is full. A process that has
  not seen it full lets a request through, so once a window is full each other process can let
  one more failure through (overshoot up to the number of processes, as for requests in flight);
- an attempt limit is written before each request it counts (its count decides at once, in every
  process) and once more when the request succeeded (the count given back): no ledger, no
  overshoot. Its doors (a second factor's code) are not hot paths.

If the cache cannot be reached, requests are let through and the failure is logged: an outage of
the cache must not become an outage of login and of every app's token refresh.
"""

import hashlib
import ipaddress
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from allauth.account.utils import url_str_to_user_pk
from django.conf import settings
from django.contrib.auth.forms import UsernameField
from django.core.cache import BaseCache, caches
from django.core.exceptions import BadRequest, SuspiciousOperation
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.template.loader import render_to_string
from django.utils import translation

from plumbing.clientip import client_address, parse_address
from plumbing.observe import ratelimit_refused
from plumbing.paths import ADMIN_LOGIN_PATH
from plumbing.requestparams import basic_credentials, request_json_pairs

logger = logging.getLogger(__name__)

# Longer values are not real client_ids or usernames (both stop at 255); they share one counter
# instead of being hashed one by one.
MAX_VALUE_LENGTH = 255
OVERSIZED = "\x00oversized"
# One IPv6 customer usually holds a whole /64: count it as one address.
IPV6_PREFIX = 64
_BODY_ERRORS = (SuspiciousOperation, BadRequest, MultiPartParserError, ValueError, RecursionError)


# --- what a limit counts per -------------------------------------------------------------------


def _bounded(value: str | None) -> str | None:
    if not value:
        return None
    return value if len(value) <= MAX_VALUE_LENGTH else OVERSIZED


# Requests that arrive with no client address (e.g. over a Unix socket from a proxy that is not
# configured as trusted) share one counter: limited together, never unlimited.
NO_ADDRESS = "\x00no-address"
_no_address_warned = False


def _warn_no_address_once() -> None:
    global _no_address_warned
    if not _no_address_warned:
        _no_address_warned = True
        logger.warning(
            "Configuration: a request arrived without a client address (empty REMOTE_ADDR, e.g. a "
            "Unix socket behind a proxy that is not in DJANGO_TRUSTED_PROXIES). All such requests "
            "share one rate-limit counter per address limit; configure the proxy to pass the "
            "client address and list it as trusted. (Logged once per process.)"
        )


def per_address(request: HttpRequest) -> str | None:
    address = client_address(request).strip()
    if not address:
        _warn_no_address_once()
        return NO_ADDRESS
    parsed = parse_address(address)
    if isinstance(parsed, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{parsed}/{IPV6_PREFIX}", strict=False))
    return _bounded(address)


def everyone(request: HttpRequest) -> str:
    """One counter for all requests: a limit on the total."""
    return "all"


def _basic_client_id(request: HttpRequest) -> str | None:
    scheme, _, credentials = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    decoded = basic_credentials(credentials.strip())
    return decoded[0] if decoded else None


def _body_client_id(request: HttpRequest) -> str | None:
    # Read the body the way the endpoints do (form or JSON object); anything they refuse
    # unread counts per address only. An unreadable body is the view's to report.
    try:
        if request.content_type == "application/json":
            return dict(request_json_pairs(request)).get("client_id")
        if request.content_type == "application/x-www-form-urlencoded":
            return request.POST.get("client_id")
    except _BODY_ERRORS:
        return None
    return None


def per_client(request: HttpRequest) -> str | None:
    """The client_id the request authenticates as: HTTP Basic first (as DOT does), then the body."""
    return _bounded(_basic_client_id(request) or _body_client_id(request))


def per_username(request: HttpRequest) -> str | None:
    try:
        # `login` on our login page (django-allauth: username or email), `username` on the admin's
        # form and from older scripts: one budget per identifier either way.
        username = request.POST.get("login") or request.POST.get("username", "")
    except _BODY_ERRORS:
        return None
    # The login forms read the username through UsernameField (strip, then NFKC), so padding and
    # compatibility forms name the same account; case variants do not get a fresh budget either.
    return _bounded(UsernameField().to_python(username[: MAX_VALUE_LENGTH * 4]).casefold())


def per_user(request: HttpRequest) -> str | None:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    return str(user.pk)


# django-allauth keeps a sign-in whose password was right and whose second factor is still asked in
# the session, under this key, with the account's primary key as allauth writes it in URLs
# (allauth.account.internal.stagekit; pinned in tests/accounts/test_allauth_internals.py).
PENDING_LOGIN_SESSION_KEY = "account_login"


def _typed_a_code(request: HttpRequest) -> bool:
    try:
        return "code" in request.POST
    except _BODY_ERRORS:
        return False


def per_account_typing_a_code(request: HttpRequest) -> str | None:
    """The account whose second factor this request types a code for: the signed-in user (a
    re-authentication), or at a sign-in's second step the account whose password was just right.
    The same value as per_user, so that both doors spend one budget per account. A passkey's answer
    (no code) cannot be guessed: the per-address limit only."""
    if not _typed_a_code(request):
        return None
    return per_user(request) or per_pending_account(request)


def per_pending_account(request: HttpRequest) -> str | None:
    """The account of the sign-in in progress (its password was right; its second factor is asked)."""
    pending = request.session.get(PENDING_LOGIN_SESSION_KEY)
    user_pk = pending.get("user_pk") if isinstance(pending, dict) else None
    if not isinstance(user_pk, str):
        return None
    try:
        return _bounded(str(url_str_to_user_pk(user_pk)))
    except (ValueError, TypeError):
        return None


# --- which responses are failures --------------------------------------------------------------


def _uploading_logo(request: HttpRequest) -> bool:
    try:
        return bool(request.FILES.get("logo"))
    except _BODY_ERRORS:
        return False


def per_user_uploading_logo(request: HttpRequest) -> str | None:
    """The signed-in user, for a request that carries a logo file: decoding an image costs CPU."""
    return per_user(request) if _uploading_logo(request) else None


def per_address_uploading_logo(request: HttpRequest) -> str | None:
    return per_address(request) if _uploading_logo(request) else None


def passkey_refused(response: HttpResponse) -> bool:
    # allauth answers a passkey it refused at re-authentication with a redirect to the login page
    # (and a message); one it accepted, with a redirect to where the user was going.
    location = response.get("Location", "") if 300 <= response.status_code < 400 else None
    return location is None or location.partition("?")[0] == settings.LOGIN_URL


def client_error(response: HttpResponse) -> bool:
    return 400 <= response.status_code < 500


def client_authentication_failed(response: HttpResponse) -> bool:
    # Only invalid_client (401). An app with many users sees invalid_grant in normal operation
    # (expired or revoked refresh tokens); counting those per client would lock all its users out.
    # A public client has no secret to protect, so no per-client failure limit: strangers could
    # only spend it (oauthflows.token.endpoints marks the answers that named one).
    return response.status_code == 401 and not getattr(response, "answered_public_client", False)


def not_for_a_resource_server(response: HttpResponse) -> bool:
    # Introspection is the hot path of every API call in the services that protect the API: a
    # resource server that authenticated is never counted (oauthflows.token.endpoints marks its answers).
    # Everything else is, failed authentications included, so guessing its secret stays limited.
    return not getattr(response, "answered_resource_server", False)


def inactive_for_a_resource_server(response: HttpResponse) -> bool:
    return getattr(response, "answered_resource_server", False) and getattr(response, "answered_inactive", False)


def not_logged_in(response: HttpResponse) -> bool:
    # The login views redirect on success and render the form again (200) on a wrong password; so
    # do the second step's and the re-authentication's (a wrong code or password: the form again).
    return not 300 <= response.status_code < 400


# --- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limit:
    name: str  # the key in settings.RATELIMITS and part of the cache key
    per: Callable[[HttpRequest], str | None]  # None: the limit does not apply to this request
    failed: Callable[[HttpResponse], bool] | None = None  # None: every request counts
    # A failure limit whose value anyone can send (a public client_id): over the limit, only an
    # answer that `failed` accepts is refused, replaced after the view; every other request is
    # answered as usual (module docstring). Such a window is filled only by failures, so the
    # request that presents the client's right secret never meets it.
    judged_after: bool = False
    # An attempt limit (module docstring): counted before the view, given back when `failed` says
    # the answer succeeded. For a secret that can be guessed: a one-in-a-million code must not get
    # "one more per process", nor a right guess be let in past the limit.
    attempts: bool = False


def _json_refusal(retry_after: int) -> HttpResponse:
    # RFC 6749 §5.2 has no code for this, and SECURITY.md allows only the §5.2 set.
    return JsonResponse(
        {
            "error": "invalid_request",
            "error_description": f"Too many requests. Slow down and retry after {retry_after} seconds.",
        },
        status=429,
    )


def _html_refusal(retry_after: int) -> HttpResponse:
    # Rendered without the request: no context processor, so no session or user lookup.
    return HttpResponse(render_to_string("ratelimited.html", {"retry_after": retry_after}), status=429)


def _code_refusal(retry_after: int) -> HttpResponse:
    """Too many wrong codes: says how long, and the ways in that stay open (a passkey, a reset)."""
    minutes = max(1, math.ceil(retry_after / 60))
    return HttpResponse(render_to_string("ratelimited_code.html", {"minutes": minutes}), status=429)


@dataclass(frozen=True)
class Route:
    limits: tuple[Limit, ...]  # checked in order: address first, so a refusal loads no session
    refusal: Callable[[int], HttpResponse]
    methods: frozenset[str] = frozenset({"POST"})  # the requests that count


def per_path_client(request: HttpRequest) -> str | None:
    """The client_id a URL names (RFC 7592's client configuration endpoint)."""
    match = request.resolver_match
    return _bounded(match.kwargs.get("client_id")) if match is not None else None


def unauthorized(response: HttpResponse) -> bool:
    return response.status_code == 401


def _failures_per_client(name: str) -> Limit:
    """Failed client authentications per client_id, judged after the view (see Limit.judged_after)."""
    return Limit(f"{name}_failures_per_client", per_client, client_authentication_failed, judged_after=True)


def _endpoint(name: str, counted: Callable[[HttpResponse], bool] | None = None) -> Route:
    """Requests per address (`counted`: only answers it accepts count, after the view), and failed
    client authentications per client."""
    return Route(
        (Limit(f"{name}_requests_per_address", per_address, counted), _failures_per_client(name)),
        _json_refusal,
    )


_LOGIN = Route(
    (
        Limit("login_failures_per_address", per_address, not_logged_in),
        Limit("login_failures_per_username", per_username, not_logged_in),
    ),
    _html_refusal,
)
_CONSENT = Route(
    (
        Limit("consent_failures_per_address", per_address, client_error),
        Limit("consent_failures_per_user", per_user, client_error),
    ),
    _html_refusal,
)

# A second factor's code, and re-authentication (a code or a password), per address and per account:
# the sign-in's second step and both re-authentication pages spend the same two budgets.
_SECOND_FACTOR_PER_ADDRESS = Limit("second_factor_failures_per_address", per_address, not_logged_in, attempts=True)
_SECOND_FACTOR = Route(
    (
        _SECOND_FACTOR_PER_ADDRESS,
        Limit("second_factor_failures_per_account", per_account_typing_a_code, not_logged_in, attempts=True),
    ),
    _code_refusal,
)
_REAUTHENTICATION = Route(
    (
        _SECOND_FACTOR_PER_ADDRESS,
        Limit("second_factor_failures_per_account", per_user, not_logged_in, attempts=True),
    ),
    _code_refusal,
)
# A passkey cannot be guessed: the per-address limit only.
_PASSKEY_REAUTHENTICATION = Route(
    (Limit("second_factor_failures_per_address", per_address, passkey_refused, attempts=True),),
    _code_refusal,
)

_LOGO_UPLOAD = Route(
    (
        Limit("logo_uploads_per_address", per_address_uploading_logo),
        Limit("logo_uploads_per_user", per_user_uploading_logo),
    ),
    _html_refusal,
)

# Routes by URL name, for paths that hold a value (a client_id): the developer pages' logo uploads.
VIEW_ROUTES: dict[str, Route] = {
    # django-allauth's second step of a sign-in and its re-authentication pages (accounts/ is mounted
    # where settings say; the names stay). A passkey posted there has the per-address limit only.
    "mfa_authenticate": _SECOND_FACTOR,
    "mfa_reauthenticate": _SECOND_FACTOR,
    "account_reauthenticate": _REAUTHENTICATION,
    "mfa_reauthenticate_webauthn": _PASSKEY_REAUTHENTICATION,
    "developer:client_create": _LOGO_UPLOAD,
    "developer:client_update": _LOGO_UPLOAD,
    # RFC 7592: every call per address; wrong registration access tokens per client, judged after
    # the view (as the token endpoint's secrets: strangers can fill it, so it refuses only them).
    "oauth:register_configuration": Route(
        (
            Limit("registration_management_per_address", per_address),
            Limit("registration_management_failures_per_client", per_path_client, unauthorized, judged_after=True),
        ),
        _json_refusal,
        methods=frozenset({"GET", "PUT", "DELETE"}),
    ),
}

ROUTES: dict[str, Route] = {
    settings.OAUTH_TOKEN_PATH: Route(
        (
            Limit("token_failures_per_address", per_address, client_error),
            _failures_per_client("token"),
            Limit("token_requests_per_address", per_address),
        ),
        _json_refusal,
    ),
    settings.OAUTH_REVOKE_PATH: _endpoint("revoke"),
    # Counted after the answer, so that a resource server's calls can be left out.
    settings.OAUTH_INTROSPECT_PATH: Route(
        (
            *_endpoint("introspect", counted=not_for_a_resource_server).limits,
            # A resource server is never throttled for its traffic, only for the tokens it asks about
            # that are not active (junk it relays): a generous failure limit of its own. Only its
            # authenticated answers fill it, so only its own traffic can meet it.
            Limit("introspect_inactive_per_resource_server", per_client, inactive_for_a_resource_server),
        ),
        _json_refusal,
    ),
    # Open registration (RFC 7591): every POST counts, per address and for everyone together.
    settings.OAUTH_REGISTRATION_PATH: Route(
        (
            Limit("registrations_per_address", per_address),
            Limit("registrations_total", everyone),
        ),
        _json_refusal,
    ),
    # The admin's login form checks the same passwords: one budget for both forms.
    settings.LOGIN_URL: _LOGIN,
    ADMIN_LOGIN_PATH: _LOGIN,
    f"{settings.OAUTH_AUTHORIZE_PATH}/allow": _CONSENT,
    f"{settings.OAUTH_AUTHORIZE_PATH}/deny": _CONSENT,
}


# --- counting ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """One limit's counter for one value. A window opens at the first counted request and closes
    one period later, whatever happened in between; then the next counted request opens another.
    """

    key: str
    period: int

    @classmethod
    def of(cls, name: str, value: str, period: int) -> "Window":
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return cls(f"ratelimit:{name}:{period}:{digest}", period)

    @property
    def _closes_key(self) -> str:
        return self.key + ":closes"

    def count(self, cache: BaseCache, now: float) -> int:
        """Add one to the counter (atomically) and return the new count."""
        if hasattr(cache, "count_in_window"):  # plumbing.countercache: one statement
            return cache.count_in_window(self.key, self.period)[0]
        if not cache.add(self.key, 1, timeout=self.period):
            try:
                return cache.incr(self.key)  # keeps the expiry the window opened with
            except ValueError:  # it closed between add and incr: open the next one
                cache.set(self.key, 1, timeout=self.period)
        cache.set(self._closes_key, now + self.period, timeout=self.period)
        return 1

    def used(self, cache: BaseCache) -> int:
        return cache.get(self.key, 0)

    @staticmethod
    def give_back(cache: BaseCache, windows: list["Window"]) -> None:
        """Take one count back from each window (an attempt that succeeded), never below zero nor
        from a closed window."""
        if hasattr(cache, "give_back"):  # plumbing.countercache: one statement for them all
            cache.give_back([window.key for window in windows])
            return
        for window in windows:
            window._give_back_one(cache)

    def _give_back_one(self, cache: BaseCache) -> None:
        try:
            if cache.decr(self.key) < 0:  # closed meanwhile, and the backend made the key anew
                cache.delete(self.key)
        except ValueError:  # closed meanwhile: nothing to give back
            pass

    def retry_after(self, cache: BaseCache, now: float) -> int:
        """Whole seconds until the window closes (the whole period if that is unknown)."""
        closes = cache.window_closes(self.key) if hasattr(cache, "window_closes") else cache.get(self._closes_key)
        return max(1, math.ceil(closes - now)) if closes else self.period


class Ledger:
    """One process's view of the shared windows (plumbing.countercache), per cache: see the module
    docstring. Thread-safe; bounded to MAX_ENTRIES windows (closed ones are forgotten first)."""

    MAX_BATCH = 25
    HEADROOM_SHARE = 8
    MAX_ENTRIES = 10_000

    def __init__(self):
        self._lock = threading.Lock()
        self._counted: dict[str, list] = {}  # key -> [shared count, unwritten, closes at, batch]
        self._full: dict[str, float] = {}  # failure windows at their limit -> closes at

    def add(self, key: str, allowed: int, now: float) -> int:
        """Count one request; the number to write now (0: none, the batch is not full)."""
        with self._lock:
            entry = self._counted.get(key)
            if entry is None or entry[2] <= now:
                self._forget_closed(now)
                self._counted[key] = [0, 0, math.inf, 1]
                return 1
            entry[1] += 1
            if entry[1] < entry[3]:
                return 0
            written, entry[1] = entry[1], 0
            return written

    def written(self, key: str, count: int, closes: float, allowed: int) -> None:
        """What the database answered for `key` (its window's count and closing time)."""
        with self._lock:
            entry = self._counted.setdefault(key, [0, 0, closes, 1])
            entry[0] = max(entry[0], count) if entry[2] == closes else count
            entry[2] = closes
            entry[3] = max(1, min(self.MAX_BATCH, (allowed - entry[0]) // self.HEADROOM_SHARE))

    def counted(self, key: str) -> tuple[int, float]:
        """(this process's best estimate of the window's count, closes at)."""
        with self._lock:
            shared, unwritten, closes, _batch = self._counted.get(key, (0, 0, math.inf, 1))
            return shared + unwritten, closes

    def failed(self, key: str, count: int, closes: float, allowed: int) -> None:
        if count >= allowed:
            with self._lock:
                self._forget_closed(time.time())
                self._full[key] = closes

    def full_until(self, key: str, now: float) -> float | None:
        closes = self._full.get(key)
        return closes if closes is not None and closes > now else None

    def _forget_closed(self, now: float) -> None:
        if len(self._counted) + len(self._full) < self.MAX_ENTRIES:
            return
        self._counted = {key: entry for key, entry in self._counted.items() if entry[2] > now}
        self._full = {key: closes for key, closes in self._full.items() if closes > now}
        if len(self._counted) + len(self._full) >= self.MAX_ENTRIES:  # all open: start again
            self._counted, self._full = {}, {}


# Per cache alias, shared by the process's threads (Django makes a cache object per thread).
_LEDGERS: dict[str, Ledger] = {}


def _ledger() -> Ledger:
    alias = settings.RATELIMIT_CACHE
    ledger = _LEDGERS.get(alias)
    if ledger is None:
        ledger = _LEDGERS.setdefault(alias, Ledger())
    return ledger


@receiver(setting_changed)
def _forget_ledgers(*, setting, **kwargs):
    if setting in {"CACHES", "RATELIMIT_CACHE", "RATELIMITS"}:
        _LEDGERS.clear()


class RateLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        attempts: list[tuple[Limit, Window]] = getattr(request, "_ratelimit_attempt_windows", [])
        succeeded = [window for limit, window in attempts if not limit.failed(response)]
        if succeeded:
            try:
                Window.give_back(caches[settings.RATELIMIT_CACHE], succeeded)
            except Exception as exc:  # any cache backend's error: see the module docstring
                _log_cache_failure(exc)
        pending: list[tuple[Limit, int, Window, int]] = getattr(request, "_ratelimit_failure_windows", [])
        failed = [entry for entry in pending if entry[0].failed(response)]
        # A window already over its limit (judged after the view) refuses this failure; it is not
        # counted again.
        refused = next(((limit, retry) for limit, _allowed, _window, retry in failed if retry), None)
        counted = [(allowed, window) for _limit, allowed, window, retry in failed if not retry]
        if counted:
            try:
                cache = caches[settings.RATELIMIT_CACHE]
                if hasattr(cache, "check_windows"):  # every failure limit in one statement
                    answers = cache.check_windows(read=[], count=[(window.key, window.period) for _, window in counted])
                    ledger = _ledger()
                    for allowed, window in counted:
                        count, closes = answers[window.key]
                        ledger.failed(window.key, count, closes, allowed)
                else:
                    for _allowed, window in counted:
                        window.count(cache, time.time())
            except Exception as exc:  # any cache backend's error: see the module docstring
                _log_cache_failure(exc)
        if refused is not None:
            limit, retry_after = refused
            return _refused(request, request._ratelimit_route, limit, retry_after)
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        route = ROUTES.get(request.path_info)
        if route is None and request.resolver_match is not None:
            route = VIEW_ROUTES.get(request.resolver_match.view_name)
        if route is None or request.method not in route.methods or not settings.RATELIMIT_ENABLED:
            return None
        now = time.time()
        try:
            cache = caches[settings.RATELIMIT_CACHE]
            if hasattr(cache, "check_windows"):
                checked = self._checked_at_once(cache, route, request, now)
            else:
                checked = list(self._checked_one_by_one(cache, route, request, now))
        except Exception as exc:  # any cache backend's error: see the module docstring
            _log_cache_failure(exc)
            return None
        pending, attempts = [], []
        for limit, allowed, window, over, retry_after in checked:
            if over and not limit.judged_after:
                return _refused(request, route, limit, retry_after)
            if limit.attempts:
                attempts.append((limit, window))  # given back in __call__ if the answer succeeded
            elif limit.failed:
                # retry_after > 0: over a limit judged after the view (refused there if it failed).
                pending.append((limit, allowed, window, retry_after if over else 0))
        # Counted in __call__ once the response says whether the request failed. Requests in
        # flight at the same moment all pass the check, so a burst can overshoot a failure limit
        # by at most the number of requests the server handles at once.
        request._ratelimit_failure_windows = pending
        request._ratelimit_attempt_windows = attempts
        request._ratelimit_route = route
        return None

    @staticmethod
    def _windows(route: Route, request):
        """(limit, allowed, window) of each limit that applies, in order; lazily, so that a limit
        is looked at (its value computed: the session, the body) only when its turn comes."""
        for limit in route.limits:
            value = limit.per(request)
            if value is not None:
                allowed, period = settings.RATELIMITS[limit.name]
                yield limit, allowed, Window.of(limit.name, value, period)

    def _checked_one_by_one(self, cache, route: Route, request, now: float):
        """Limit by limit, in order, stopping at the first one over that refuses before the view
        (address first: a refused request loads no session)."""
        for limit, allowed, window in self._windows(route, request):
            if limit.failed and not limit.attempts:
                over = window.used(cache) >= allowed
            else:
                over = window.count(cache, now) > allowed
            yield limit, allowed, window, over, window.retry_after(cache, now) if over else 0
            if over and not limit.judged_after:
                return

    def _checked_at_once(self, cache, route: Route, request, now: float):
        """Every limit of the route from this process's ledger, with at most one round trip
        (plumbing.countercache.PostgresCounterCache.check_windows) for the request limits whose batch is full and for
        every attempt limit (whose count is the database's, never the ledger's). A request refused
        by one limit is still counted by the others (it was a request)."""
        ledger = _ledger()
        windows = list(self._windows(route, request))
        writes = []
        for limit, allowed, window in windows:
            if limit.attempts:  # always written: the database's count decides, not the ledger's
                writes.append((window.key, window.period, 1))
            elif not limit.failed and (by := ledger.add(window.key, allowed, now)):
                writes.append((window.key, window.period, by))
        answers = cache.check_windows(read=[], count=writes) if writes else {}
        for limit, allowed, window in windows:
            if window.key in answers and not limit.failed:
                ledger.written(window.key, *answers[window.key], allowed)
        checked = []
        for limit, allowed, window in windows:
            if limit.attempts:
                value, closes = answers[window.key]
                over = value > allowed
            elif limit.failed:
                closes = ledger.full_until(window.key, now)
                over = closes is not None
            else:
                value, closes = ledger.counted(window.key)
                over = value > allowed
            retry_after = (max(1, math.ceil(closes - now)) if closes != math.inf else window.period) if over else 0
            checked.append((limit, allowed, window, over, retry_after))
        return checked


def _refused(request: HttpRequest, route: Route, limit: Limit, retry_after: int) -> HttpResponse:
    logger.warning("Rate limit %s reached: %s from %s", limit.name, request.path_info, client_address(request))
    ratelimit_refused.send(sender=RateLimitMiddleware, limit=limit.name)
    if hasattr(request, "LANGUAGE_CODE"):
        # A page refused after its view (a failed login) is rendered here, outside the page's
        # language (accounts.languages undoes it as the response leaves): in it, all the same.
        with translation.override(request.LANGUAGE_CODE):
            response = route.refusal(retry_after)
    else:
        response = route.refusal(retry_after)
    response["Retry-After"] = str(retry_after)
    response["Cache-Control"] = "no-store"
    return response


def _log_cache_failure(exc: Exception) -> None:
    logger.error("Rate limiting skipped: the cache is unavailable (%s)", type(exc).__name__)
