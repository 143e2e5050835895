import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from oauthclients import services
from oauthclients.models import AuditAction, ClientAuditEvent, ClientSecret, ClientStatus, OAuthClient, digest
from oauthclients.services import PURPOSE_REQUIRED
from tests.factories import make_client

GOOD_URI = "https://calendar-sync.example.com/callback"


def run(*args):
    """Call the command; return its stdout parsed as JSON Lines (a list for `list`, else the one object)."""
    out = StringIO()
    call_command("oauthclient", *args, stdout=out, stderr=StringIO())
    lines = out.getvalue().splitlines()
    assert all(line.startswith("{") for line in lines), out.getvalue()
    items = [json.loads(line) for line in lines]
    return items if "list" in args else items[0]


def refused(*args) -> str:
    """Call the command expecting a refusal; return the message and check nothing was printed."""
    out = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("oauthclient", *args, stdout=out, stderr=StringIO())
    assert out.getvalue() == ""
    return str(caught.value)


def create_args(*extra, owner="owner", uris=(GOOD_URI,), scopes=("PROFILE_READ",)):
    args = ["create", "--owner", owner, "--name", "Shell App", "--purpose", "Syncs your calendar."]
    for uri in uris:
        args += ["--redirect-uri", uri]
    for scope in scopes:
        args += ["--scope", scope]
    return [*args, *extra]


# --- create ---


def test_create_registers_a_pending_confidential_client_and_prints_its_first_secret_once(owner):
    result = run(*create_args(scopes=("PROFILE_READ BOOKING_READ", "SCHEDULE_READ,PROFILE_WRITE")))

    assert set(result) == {"client_id", "client_secret", "secret_id", "kind", "status"}
    client = OAuthClient.objects.get(client_id=result["client_id"])
    assert client.owner == owner
    assert result["status"] == client.status == ClientStatus.PENDING
    assert sorted(client.scope_list) == ["BOOKING_READ", "PROFILE_READ", "PROFILE_WRITE", "SCHEDULE_READ"]
    secret = ClientSecret.objects.get(pk=result["secret_id"], client=client)
    assert secret.digest == digest(result["client_secret"])
    assert client.website_url == "https://calendar-sync.example.com/"


def test_create_uses_the_given_website_and_purpose(owner):
    result = run(*create_args("--website", "https://www.example.com/about", "--purpose", "Syncs things"))
    client = OAuthClient.objects.get(client_id=result["client_id"])
    assert client.website_url == "https://www.example.com/about"
    assert client.purpose == "Syncs things"


def test_create_public_prints_no_secret(owner):
    result = run(*create_args("--public"))
    assert result["client_secret"] is None and result["secret_id"] is None
    assert not ClientSecret.objects.filter(client__client_id=result["client_id"]).exists()


def test_create_legacy_makes_a_client_without_scopes(owner):
    result = run(*create_args("--legacy", scopes=()))
    client = OAuthClient.objects.get(client_id=result["client_id"])
    assert client.is_legacy and client.scope_list == []


def test_create_approve_records_the_actor_as_reviewer(owner, reviewer):
    result = run("--actor", "reviewer", *create_args("--approve"))
    client = OAuthClient.objects.get(client_id=result["client_id"])
    assert result["status"] == client.status == ClientStatus.APPROVED
    assert client.reviewed_by == reviewer


def test_create_approve_without_actor_records_no_reviewer_rather_than_the_owner(owner):
    result = run(*create_args("--approve"))
    client = OAuthClient.objects.get(client_id=result["client_id"])
    assert client.status == ClientStatus.APPROVED
    assert client.reviewed_by is None
    assert ClientAuditEvent.objects.get(client=client, action=AuditAction.CLIENT_APPROVED).actor is None


@pytest.mark.parametrize(
    ("kwargs", "extra", "message"),
    [
        ({"owner": "nobody"}, [], "Unknown owner: no user named 'nobody'."),
        ({"uris": ["not a url"]}, [], "redirect_uris: A redirect URI cannot be empty or contain spaces."),
        ({"uris": ["calendar-sync.example.com/cb"]}, [], "must be an absolute http(s) URL"),
        ({"uris": ["http://calendar-sync.example.com/cb"]}, [], "must use https"),
        ({"uris": [f"https://app.example.com/cb{n}" for n in range(11)]}, [], "at most 10 redirect URIs (got 11)"),
        ({"scopes": ["PROFILE_READ NOT_A_SCOPE"]}, [], "scopes: Unknown scope: NOT_A_SCOPE"),
        ({"scopes": []}, [], "scopes: Select at least one scope."),
        ({}, ["--legacy"], "scopes: A legacy client has no scopes"),
        ({"scopes": [" , "]}, [], "scopes: Select at least one scope."),
    ],
)
def test_create_refuses_invalid_input_and_creates_nothing(owner, kwargs, extra, message):
    assert message in refused(*create_args(*extra, **kwargs))
    assert not OAuthClient.objects.exists()


def test_create_refuses_an_unknown_actor(owner):
    assert "Unknown actor: no user named 'ghost'." in refused("--actor", "ghost", *create_args())
    assert not OAuthClient.objects.exists()


def test_create_requires_a_redirect_uri(owner):
    assert "--redirect-uri" in refused("create", "--owner", "owner", "--name", "X", "--scope", "PROFILE_READ")


# --- approve / reject ---


def test_approve_approves_a_pending_client_as_the_actor(reviewer, client_obj):
    result = run("--actor", "reviewer", "approve", client_obj.client_id)
    client_obj.refresh_from_db()
    assert result["status"] == client_obj.status == ClientStatus.APPROVED
    assert result["reviewed_by"] == "reviewer"
    assert client_obj.reviewed_by == reviewer


def test_approve_refuses_an_unknown_client(db):
    assert "no OAuth client with client_id 'nope'" in refused("approve", "nope")


def test_approve_refuses_a_rejected_client(reviewer, client_obj):
    services.client_reject(client=client_obj, actor=reviewer, reason="No")
    assert "Only a pending or unverified client can be approved" in refused("approve", client_obj.client_id)
    client_obj.refresh_from_db()
    assert client_obj.status == ClientStatus.REJECTED


def test_reject_rejects_with_the_reason(client_obj):
    result = run("reject", client_obj.client_id, "--reason", "Misleading name")
    client_obj.refresh_from_db()
    assert result["status"] == client_obj.status == ClientStatus.REJECTED
    assert result["rejection_reason"] == client_obj.rejection_reason == "Misleading name"
    assert client_obj.reviewed_by is None


@pytest.mark.parametrize("reason_args", [[], ["--reason", "   "]])
def test_reject_refuses_a_missing_or_empty_reason(client_obj, reason_args):
    message = refused("reject", client_obj.client_id, *reason_args)
    assert "--reason" in message or "Give the owner a reason" in message
    client_obj.refresh_from_db()
    assert client_obj.status == ClientStatus.PENDING


def test_reject_refuses_an_unknown_client(db):
    assert "no OAuth client" in refused("reject", "nope", "--reason", "x")


# --- show / list ---


def test_show_prints_the_client_with_secret_hints_and_never_a_digest(created):
    out = StringIO()
    call_command("oauthclient", "show", created.client.client_id, stdout=out)
    secret = created.secret.secret

    result = json.loads(out.getvalue())

    assert result["client_id"] == created.client.client_id
    assert result["owner"] == "owner"
    assert result["kind"] == "confidential"
    assert result["status"] == "pending"
    assert result["legacy"] is False
    assert result["scopes"] == created.client.scope_list
    assert result["redirect_uris"] == [GOOD_URI]
    assert result["secrets"] == [
        {
            "id": secret.pk,
            "hint": secret.hint,
            "created": secret.created.isoformat(),
            "last_used": None,
            "revoked": None,
        }
    ]
    assert {"created", "updated", "rejection_reason", "name"} <= set(result)
    assert secret.digest not in out.getvalue()
    assert created.secret.plaintext not in out.getvalue()


def test_show_refuses_an_unknown_client(db):
    assert "no OAuth client" in refused("show", "nope")


def test_list_prints_every_client_or_those_with_a_status(client_obj, approved):
    assert {c["client_id"] for c in run("list")} == {client_obj.client_id, approved.client.client_id}
    assert [c["client_id"] for c in run("list", "--status", "approved")] == [approved.client.client_id]
    assert run("list", "--status", "rejected") == []


def test_list_refuses_an_unknown_status(db):
    assert "invalid choice: 'bogus'" in refused("list", "--status", "bogus")


# --- secrets ---


def test_add_secret_prints_a_new_secret_once_and_stores_its_digest(client_obj):
    result = run("add-secret", client_obj.client_id)
    secret = ClientSecret.objects.get(pk=result["secret_id"])
    assert secret.client == client_obj
    assert secret.digest == digest(result["client_secret"])
    assert client_obj.secrets.filter(revoked_at__isnull=True).count() == 2


def test_add_secret_refuses_a_third_active_secret(client_obj):
    run("add-secret", client_obj.client_id)
    assert "already has 2 active secrets" in refused("add-secret", client_obj.client_id)
    assert client_obj.secrets.filter(revoked_at__isnull=True).count() == 2


def test_add_secret_refuses_a_public_client(owner):
    public = make_client(owner, kind="public").client
    assert "A public client has no secrets" in refused("add-secret", public.client_id)


def test_add_secret_refuses_an_unknown_client(db):
    assert "no OAuth client" in refused("add-secret", "nope")


def test_revoke_secret_revokes_one_of_two(created):
    old = created.secret.secret
    run("add-secret", created.client.client_id)

    result = run("--actor", "owner", "revoke-secret", created.client.client_id, str(old.pk))

    old.refresh_from_db()
    assert result["secret_id"] == old.pk
    assert result["revoked"] == old.revoked_at.isoformat()
    assert ClientAuditEvent.objects.get(action=AuditAction.SECRET_REVOKED).actor == created.client.owner


def test_revoke_secret_refuses_the_last_active_secret(created):
    only = created.secret.secret
    assert "last active secret" in refused("revoke-secret", created.client.client_id, str(only.pk))
    only.refresh_from_db()
    assert only.revoked_at is None


def test_revoke_secret_refuses_another_clients_secret(created, approved):
    run("add-secret", created.client.client_id)
    foreign = approved.secret.secret
    assert f"no active secret with id {foreign.pk}" in refused(
        "revoke-secret", created.client.client_id, str(foreign.pk)
    )


def test_revoke_secret_refuses_a_secret_id_that_is_not_a_number(created):
    assert "invalid int value" in refused("revoke-secret", created.client.client_id, "abc")


def test_revoke_secret_refuses_an_unknown_client(db):
    assert "no OAuth client" in refused("revoke-secret", "nope", "1")


# --- set-scopes ---


def test_set_scopes_migrates_a_legacy_client(owner, reviewer):
    legacy = make_client(owner, is_legacy=True).client

    result = run("--actor", "reviewer", "set-scopes", legacy.client_id, "PROFILE_READ,BOOKING_READ", "SCHEDULE_READ")

    legacy.refresh_from_db()
    assert legacy.is_legacy is False
    assert result["legacy"] is False
    assert result["scopes"] == legacy.scope_list == ["BOOKING_READ", "SCHEDULE_READ", "PROFILE_READ"]
    assert ClientAuditEvent.objects.get(client=legacy, action=AuditAction.CLIENT_SCOPES_SET).actor == reviewer


def test_set_scopes_refuses_an_unknown_scope(client_obj):
    assert "Unknown scope: NOPE" in refused("set-scopes", client_obj.client_id, "PROFILE_READ", "NOPE")
    client_obj.refresh_from_db()
    assert client_obj.scope_list == ["BOOKING_READ", "PROFILE_READ"]


def test_set_scopes_needs_at_least_one_scope(client_obj):
    assert "SCOPE" in refused("set-scopes", client_obj.client_id)


def test_set_scopes_refuses_an_unknown_client(db):
    assert "no OAuth client" in refused("set-scopes", "nope", "PROFILE_READ")


@pytest.mark.django_db(transaction=True)  # real commits: the review mail is sent as in production
@pytest.mark.parametrize("action", ["approve", "reject"])
def test_stdout_is_only_json_with_the_default_console_mail(owner, reviewer, settings, capsys, action):
    from config import settings as project_settings

    # Without EMAIL_HOST the project mails to the console: on stderr, so stdout pipes into jq.
    assert project_settings.EMAIL_HOST == "" and project_settings.EMAIL_BACKEND == "plumbing.mail.StderrEmailBackend"
    settings.EMAIL_BACKEND = project_settings.EMAIL_BACKEND
    client = make_client(owner).client
    extra = ["--reason", "Unclear purpose."] if action == "reject" else []
    call_command("oauthclient", action, client.client_id, *extra)
    out, err = capsys.readouterr()
    assert json.loads(out)["client_id"] == client.client_id  # nothing but the JSON document
    assert "Subject:" in err and client.client_id in err  # the review mail went to stderr


# --- what a newcomer reads on the terminal (first-hour findings) ---


def test_create_refuses_an_empty_purpose_with_the_services_words(owner):
    args = [a for a in create_args() if a not in ("--purpose", "Syncs your calendar.")]
    assert refused(*args, "--purpose", "  ") == f"purpose: {PURPOSE_REQUIRED}"
    assert not OAuthClient.objects.exists()


def test_every_subcommand_prints_one_json_object_per_line(client_obj, approved):
    out = StringIO()
    call_command("oauthclient", "list", stdout=out, stderr=StringIO())
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["client_id"] for line in lines)
    # Oldest first, as the admin's review queue.
    assert [json.loads(line)["client_id"] for line in lines] == [client_obj.client_id, approved.client.client_id]


def test_a_successful_change_writes_nothing_to_stderr(client_obj, reviewer, capsys):
    err = StringIO()
    call_command("oauthclient", "--actor", "reviewer", "approve", client_obj.client_id, stdout=StringIO(), stderr=err)
    assert err.getvalue() == "" and capsys.readouterr().err == ""


def test_a_refusal_on_the_command_line_is_one_line_without_the_exception_name(db, capsys):
    from django.core.management import load_command_class

    command = load_command_class("oauthclients", "oauthclient")
    with pytest.raises(SystemExit) as exit_status:
        command.run_from_argv(["manage.py", "oauthclient", "show", "nope"])  # as the shell runs it
    assert exit_status.value.code == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "oauthclient: Unknown client: no OAuth client with client_id 'nope'.\n"
