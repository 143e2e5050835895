import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from oauthclients.models import ClientAuditEvent, ClientKind, ClientSecret, ClientStatus, OAuthClient, digest
from tests.factories import make_user

SECRET_LINE = re.compile(r"^Demo client_secret: (cs_\S+)$", re.MULTILINE)


@pytest.fixture
def debug(settings):
    settings.DEBUG = True


def seed(*args) -> str:
    out = StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


def counts():
    return (
        get_user_model().objects.count(),
        OAuthClient.objects.count(),
        ClientSecret.objects.count(),
        ClientAuditEvent.objects.count(),
    )


def test_it_creates_the_demo_cast_and_prints_the_secret_once(db, debug):
    output = seed()

    User = get_user_model()
    admin = User.objects.get(username="admin")
    assert admin.is_staff and admin.is_superuser and admin.check_password("admin-demo-password")
    developer = User.objects.get(username="developer")
    assert not developer.is_staff and developer.check_password("developer-demo-password")
    enduser = User.objects.get(username="enduser")
    assert not enduser.is_staff and enduser.check_password("enduser-demo-password")

    client = OAuthClient.objects.get(name="Demo Calendar App")
    assert client.owner == developer
    assert client.is_confidential
    assert client.status == ClientStatus.APPROVED and client.reviewed_by == admin
    assert client.scope_list == ["BOOKING_READ", "SCHEDULE_READ", "PROFILE_READ", "PROFILE_WRITE"]
    assert client.redirect_uri_list == ["http://localhost:8765/callback", "http://127.0.0.1:8765/callback"]
    assert client.website_url == "http://localhost:8765/"

    (plaintext,) = SECRET_LINE.findall(output)
    assert ClientSecret.objects.get(client=client).digest == digest(plaintext)
    assert client.client_id in output
    assert f"DJANGO_DEBUG=1 .venv/bin/python manage.py oauthclient add-secret {client.client_id}" in output
    for expected in (
        "http://testserver/admin/",  # the test settings' issuer
        "http://testserver/settings/developer/",
        "admin-demo-password",
    ):
        assert expected in output


def test_the_printed_urls_follow_the_issuer(db, debug, settings):
    settings.OAUTH_ISSUER = "http://127.0.0.1:8123"
    output = seed()
    assert "http://127.0.0.1:8123/admin/" in output and "http://127.0.0.1:8123/settings/developer/" in output
    assert ":8000" not in output


def test_a_second_run_creates_nothing_and_prints_no_secret(db, debug):
    seed()
    before = counts()

    output = seed()

    assert counts() == before
    assert "cs_" not in output
    assert "User admin already exists" in output
    assert "Client Demo Calendar App already exists" in output
    assert OAuthClient.objects.get().client_id in output


def test_it_creates_only_the_missing_users(db, debug):
    existing = make_user("enduser")

    seed()

    existing.refresh_from_db()
    assert not existing.check_password("enduser-demo-password")  # left as it was
    assert get_user_model().objects.filter(username__in=["admin", "developer", "enduser"]).count() == 3


def test_it_refuses_to_run_without_debug(db, settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG"):
        seed()
    assert counts() == (0, 0, 0, 0)


def test_force_runs_it_without_debug(db, settings):
    settings.DEBUG = False
    seed("--force")
    assert OAuthClient.objects.filter(name="Demo Calendar App", status=ClientStatus.APPROVED).exists()


def test_it_registers_the_api_docs_client_for_swagger_ui(db, settings):
    settings.DEBUG = True
    settings.OAUTH_ISSUER = "http://127.0.0.1:8000"
    out = StringIO()
    call_command("seed_demo", stdout=out)
    docs = OAuthClient.objects.get(client_id=settings.OAUTH_DOCS_CLIENT_ID)
    assert (docs.client_type, docs.status) == (ClientKind.PUBLIC, "approved")
    assert docs.redirect_uri_list == ["http://127.0.0.1:8000/v2/docs/oauth2-redirect.html"]
    assert f"client_id {settings.OAUTH_DOCS_CLIENT_ID}" in out.getvalue()
    call_command("seed_demo", stdout=StringIO())  # a second run keeps it
    assert OAuthClient.objects.filter(client_id=settings.OAUTH_DOCS_CLIENT_ID).count() == 1
