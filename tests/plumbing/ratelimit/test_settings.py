import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.urls import resolve

from plumbing.env import env_networks, env_rate
from plumbing.ratelimit import ROUTES, VIEW_ROUTES
from tests.plumbing.ratelimit.settings_probe import production_settings


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("20/m", (20, 60)),
        ("10/5m", (10, 300)),
        ("600/60s", (600, 60)),
        ("30/90", (30, 90)),
        ("1000/h", (1000, 3600)),
        (" 7/2M ", (7, 120)),
    ],
)
def test_a_rate_is_read_from_the_environment(monkeypatch, raw, expected):
    monkeypatch.setenv("RATELIMIT_X", raw)
    assert env_rate("RATELIMIT_X", "1/s") == expected


def test_an_unset_or_empty_rate_takes_the_default(monkeypatch):
    monkeypatch.delenv("RATELIMIT_X", raising=False)
    assert env_rate("RATELIMIT_X", "10/5m") == (10, 300)
    monkeypatch.setenv("RATELIMIT_X", "")
    assert env_rate("RATELIMIT_X", "10/5m") == (10, 300)


@pytest.mark.parametrize("raw", ["20", "20/", "0/m", "20/0", "-1/m", "x/m", "20/m/s", "20/d", "²/m", "20 / m"])
def test_a_nonsensical_rate_is_a_startup_error(monkeypatch, raw):
    monkeypatch.setenv("RATELIMIT_X", raw)
    with pytest.raises(ImproperlyConfigured, match="RATELIMIT_X"):
        env_rate("RATELIMIT_X", "1/s")


def test_trusted_proxies_are_addresses_or_networks(monkeypatch):
    monkeypatch.setenv("DJANGO_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.10 ,2001:db8::/32,")
    assert env_networks("DJANGO_TRUSTED_PROXIES") == ["10.0.0.0/8", "192.0.2.10/32", "2001:db8::/32"]
    monkeypatch.delenv("DJANGO_TRUSTED_PROXIES")
    assert env_networks("DJANGO_TRUSTED_PROXIES") == []


def test_a_trusted_proxy_that_is_no_address_is_a_startup_error(monkeypatch):
    monkeypatch.setenv("DJANGO_TRUSTED_PROXIES", "10.0.0.0/8,proxy.internal")
    with pytest.raises(ImproperlyConfigured, match="proxy.internal"):
        env_networks("DJANGO_TRUSTED_PROXIES")


def test_production_defaults_are_the_documented_ones():
    # docs/configuration.md. The test settings loosen them all (config/settings_test.py).
    seen = production_settings(
        "print(json.dumps([settings.RATELIMITS, settings.TRUSTED_PROXIES,"
        " settings.CACHES['default']['BACKEND'], settings.RATELIMIT_ENABLED]))",
        DATABASE_URL="sqlite:////tmp/settings-probe.sqlite3",  # PostgreSQL's caches: test_postgres_counters.py
    )
    assert seen == [
        {
            "token_failures_per_address": [60, 60],
            "token_failures_per_client": [20, 60],
            "token_requests_per_address": [600, 60],
            "revoke_requests_per_address": [300, 60],
            "revoke_failures_per_client": [20, 60],
            "introspect_requests_per_address": [300, 60],
            "introspect_failures_per_client": [20, 60],
            "introspect_inactive_per_resource_server": [3000, 60],
            "login_failures_per_address": [10, 300],
            "login_failures_per_username": [10, 300],
            "second_factor_failures_per_account": [30, 900],
            "second_factor_failures_per_address": [30, 900],
            "consent_failures_per_address": [20, 60],
            "consent_failures_per_user": [20, 60],
            "logo_uploads_per_user": [10, 3600],
            "logo_uploads_per_address": [30, 3600],
            "registrations_per_address": [50, 3600],
            "registrations_total": [1000, 3600],
            "registration_management_per_address": [120, 3600],
            "registration_management_failures_per_client": [20, 60],
        },
        [],
        "django.core.cache.backends.locmem.LocMemCache",
        True,
    ]


def test_each_limit_is_read_from_its_environment_variable():
    seen = production_settings(
        "print(json.dumps([settings.RATELIMITS['login_failures_per_username'], settings.TRUSTED_PROXIES]))",
        RATELIMIT_LOGIN_FAILURES_PER_USERNAME="3/h",
        DJANGO_TRUSTED_PROXIES="10.1.0.0/16",
    )
    assert seen == [[3, 3600], ["10.1.0.0/16"]]


def test_every_limit_in_the_table_has_a_setting():
    routes = [*ROUTES.values(), *VIEW_ROUTES.values()]
    named = {limit.name for route in routes for limit in route.limits}
    assert named == set(django_settings.RATELIMITS)


@pytest.mark.parametrize("path", sorted(ROUTES))
def test_every_path_in_the_table_is_served(path):
    assert resolve(path).func is not None


@pytest.mark.parametrize("path", ["/settings/developer/clients/new/", "/settings/developer/clients/abc/edit/"])
def test_the_pages_that_take_a_logo_are_in_the_table_by_url_name(path):
    assert resolve(path).view_name in VIEW_ROUTES


@pytest.mark.parametrize(
    "path",
    [
        "/accounts/2fa/authenticate/",
        "/accounts/2fa/reauthenticate/",
        "/accounts/reauthenticate/",
        "/accounts/2fa/webauthn/reauthenticate/",
    ],
)
def test_the_second_step_and_every_re_authentication_are_in_the_table_by_url_name(path):
    assert resolve(path).view_name in VIEW_ROUTES


def test_the_limiter_runs_after_static_files_and_before_sessions_and_csrf(settings):
    middleware = settings.MIDDLEWARE
    position = middleware.index("plumbing.ratelimit.RateLimitMiddleware")
    assert middleware.index("whitenoise.middleware.WhiteNoiseMiddleware") < position
    assert position < middleware.index("django.contrib.sessions.middleware.SessionMiddleware")
    assert position < middleware.index("plumbing.csrf.FetchMetadataCsrfViewMiddleware")


@pytest.mark.parametrize("endpoint", ["REVOKE", "INTROSPECT"])
def test_a_retired_per_client_request_limit_is_a_startup_error_not_ignored(endpoint):
    # Strangers could fill them with a public client_id (issue 28): the failure limits replace them.
    with pytest.raises(
        AssertionError, match=f"RATELIMIT_{endpoint}_REQUESTS_PER_CLIENT is gone: set RATELIMIT_{endpoint}_FAILURES"
    ):
        production_settings("print(1)", **{f"RATELIMIT_{endpoint}_REQUESTS_PER_CLIENT": "300/m"})
