"""Traces (operations/tracing.py): nothing loaded without OTEL_EXPORTER_OTLP_ENDPOINT; with an
in-memory exporter, one span tree per token request with its database statements under it (on
PostgreSQL, through psycopg) and no credential in any attribute."""

import os
import subprocess
import sys
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test import Client
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from operations.tracing import instrument, uninstrument
from tests.factories import PASSWORD, make_client, make_user
from tests.integration.server import PROJECT_ROOT
from tests.oauthflows.helpers import get_code


def _loaded_modules(**env) -> str:
    code = (
        "import django, sys; django.setup(); "
        "loaded = {m.split('.')[1] for m in sys.modules if m.startswith('opentelemetry.')}; "
        "print(sorted(loaded & {'sdk', 'instrumentation'}))"
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings_test", **env)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, env=environment, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_nothing_is_loaded_without_an_endpoint():
    assert _loaded_modules() == "[]"


def test_the_sdk_and_instrumentations_are_loaded_with_one():
    assert _loaded_modules(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9") == "['instrumentation', 'sdk']"


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    connection.close()  # psycopg's instrumentation traces connections opened from now on
    instrument(provider)
    yield exporter
    uninstrument()
    connection.close()


@pytest.mark.django_db(transaction=True)
def test_one_span_tree_per_token_request_with_no_credential(spans):
    owner = make_user("owner")
    created = make_client(owner, redirect_uris=["https://app.example/cb"], scopes=["PROFILE_READ"], approve=True)
    client, secret = created.client, created.secret.plaintext
    user = make_user("reader")
    browser = Client()
    assert browser.login(username=user.username, password=PASSWORD)
    code = get_code(browser, client)
    spans.clear()

    body = {"grant_type": "authorization_code", "code": code, "redirect_uri": "https://app.example/cb"}
    issued = (
        Client()
        .post(
            "/v2/auth/oauth2/token",
            urlencode({**body, "client_id": client.client_id, "client_secret": secret}),
            content_type="application/x-www-form-urlencoded",
        )
        .json()
    )
    Client().get(f"/v2/me?access_token={issued['access_token']}", HTTP_AUTHORIZATION=f"Bearer {issued['access_token']}")

    finished = spans.get_finished_spans()
    roots = [span for span in finished if span.parent is None]
    assert [root.attributes.get("http.method") or root.attributes.get("http.request.method") for root in roots] == [
        "POST",
        "GET",
    ]
    token_root = roots[0]
    under_token = [
        span for span in finished if span.parent is not None and span.context.trace_id == token_root.context.trace_id
    ]
    if connection.vendor == "postgresql":
        statements = [span.attributes.get("db.statement", "") for span in under_token]
        assert any("oauthclients" in statement for statement in statements), statements
    everything = repr([(span.name, dict(span.attributes or {})) for span in finished])
    for credential in (secret, code, issued["access_token"], issued["refresh_token"]):
        assert credential not in everything


@pytest.mark.django_db(transaction=True)
def test_a_key_in_the_path_is_not_in_a_span(spans):
    key = "cf5k2p-0123456789abcdef0123456789abcdef"
    Client().get(f"/accounts/password/reset/key/7-{key}/")
    Client().get(f"/accounts/confirm-email/MQ:{key}/")
    finished = spans.get_finished_spans()
    roots = [span for span in finished if span.parent is None]
    assert [root.attributes["http.target"] for root in roots] == [
        "/accounts/password/reset/key/7-[redacted]/",
        "/accounts/confirm-email/[redacted]/",
    ]
    assert key not in repr([(span.name, dict(span.attributes or {})) for span in finished])
