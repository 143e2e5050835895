"""/healthz and /readyz (docs/operating.md): plain JSON, never cached, exempt from the HTTPS
redirect and the host check only for HEALTH_CHECK_NETWORKS (by the socket's peer), 503 while
draining or while the database, the migrations, the cache or the signing keys are not there."""

import json

import pytest
from django.db import OperationalError
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from operations import readiness
from operations.drain import drain_start
from signing.keys import signing_key_create

OUTSIDE = "203.0.113.9"


@pytest.fixture
def production_like(settings):
    """HTTPS required and a strict host list, as in production."""
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["auth.example.com"]


def _get(path, *, remote_addr="127.0.0.1", host="10.0.0.5:8000", **headers):
    return Client().get(path, REMOTE_ADDR=remote_addr, HTTP_HOST=host, **headers)


def test_healthz_answers_a_balancer_over_http_with_its_own_host(production_like):
    response = _get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response["Cache-Control"] == "no-store"


@pytest.mark.django_db
def test_readyz_answers_ready_with_each_check(production_like):
    signing_key_create(algorithm="ES256")
    response = _get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "status": "ready",
        "checks": {
            "database": "ok",
            "migrations": "ok",
            "signing_keys": "ok",
            "identity_providers": "ok",
            "cache": "ok",
        },
    }
    assert response["Cache-Control"] == "no-store"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_outside_the_networks_the_redirect_and_host_check_apply(production_like, path):
    # A forwarded header naming loopback does not make a stranger the balancer.
    assert _get(path, remote_addr=OUTSIDE, HTTP_X_FORWARDED_FOR="127.0.0.1").status_code == 400  # bad host
    redirected = _get(path, remote_addr=OUTSIDE, host="auth.example.com")
    assert redirected.status_code == 301 and redirected["Location"].startswith("https://")


@pytest.mark.django_db
def test_a_configured_network_is_exempt(production_like, settings):
    settings.HEALTH_CHECK_NETWORKS = ["10.1.0.0/16"]
    assert _get("/healthz", remote_addr="10.1.2.3").status_code == 200
    assert _get("/healthz", remote_addr="127.0.0.1").status_code == 400  # loopback is no longer listed


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_a_request_relayed_by_a_proxy_on_loopback_goes_through_the_whole_stack(production_like, path):
    # A proxy beside the server relays strangers from loopback, marked with X-Forwarded-*: they are
    # not the balancer's probe, so the host check and the HTTPS redirect apply to them.
    assert _get(path, HTTP_X_FORWARDED_FOR=OUTSIDE).status_code == 400  # the prober's own Host: refused
    relayed = _get(path, host="auth.example.com", HTTP_X_FORWARDED_FOR=OUTSIDE)
    assert relayed.status_code == 301 and relayed["Location"].startswith("https://")
    assert _get(path).status_code == 200  # the probe itself, unmarked


@pytest.mark.django_db
def test_readyz_through_the_whole_stack_from_outside():
    response = Client().get("/readyz", REMOTE_ADDR=OUTSIDE)
    assert response.status_code == 200 and response.json()["status"] == "ready"


@pytest.mark.django_db
def test_readyz_turns_503_while_draining_and_healthz_stays_200():
    drain_start()
    response = _get("/readyz")
    assert response.status_code == 503
    assert response.json()["status"] == "draining"
    assert response.json()["checks"]["shutdown"].startswith("draining")
    assert _get("/healthz").status_code == 200


@pytest.mark.django_db
def test_readyz_names_the_database_without_its_message(monkeypatch):
    class Down:
        def __enter__(self):
            raise OperationalError('connection to server at "db.internal" (10.0.0.7), user "oauth" failed')

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(readiness.connection, "cursor", lambda: Down())
    response = _get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "unavailable (OperationalError)"
    assert "db.internal" not in response.content.decode() and "oauth" not in response.content.decode()


@pytest.mark.django_db
def test_readyz_refuses_with_migrations_not_applied(monkeypatch):
    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets: [("a", False), ("b", False)])
    response = _get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["migrations"] == "2 not applied (manage.py migrate)"


@pytest.mark.django_db
def test_readyz_refuses_when_a_signing_key_does_not_decrypt(settings):
    key = signing_key_create(algorithm="ES256")
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = "another-key-encryption-key-of-enough-length"
    response = _get("/readyz")
    assert response.status_code == 503
    problem = response.json()["checks"]["signing_keys"]
    assert problem.startswith("OAUTH_SIGNING_KEY_ENCRYPTION_KEY does not decrypt") and key.kid in problem
    assert "another-key-encryption-key" not in response.content.decode()
    assert key.private_jwe not in response.content.decode()


@pytest.mark.django_db
def test_readyz_refuses_when_the_shared_cache_is_down(settings):
    settings.CACHES = {
        **settings.CACHES,
        "shared": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        },
    }
    response = _get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["cache"].startswith("shared: unavailable (")


def test_healthz_is_json():
    assert json.loads(_get("/healthz").content) == {"status": "ok"}


@pytest.mark.django_db
def test_balancer_answers_carry_their_length(production_like):
    # Answered before Django's CommonMiddleware: without its own Content-Length, gunicorn would send
    # the body in chunks.
    signing_key_create(algorithm="ES256")
    ready = _get("/readyz")
    drain_start()
    for response in (_get("/healthz"), ready, _get("/readyz")):
        assert response["Content-Length"] == str(len(response.content)), response.status_code
    assert [ready.status_code, _get("/readyz").status_code] == [200, 503]
