"""`make run`'s terminal: seeding prints its summary only; no audit JSON, no mail (first-hour finding 2)."""

from io import StringIO

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db(transaction=True)  # real commits: the review mail would go out


def test_seeding_prints_the_summary_and_nothing_else(settings, capsys, mailoutbox):
    settings.DEBUG = True
    settings.EMAIL_BACKEND = "plumbing.mail.StderrEmailBackend"  # what `make run` uses
    out = StringIO()

    call_command("seed_demo", stdout=out)

    err = capsys.readouterr().err
    assert '"event": "client.' not in err and "Subject:" not in err, err
    text = out.getvalue()
    summary = text[text.index("=" * 72) :]
    for expected in (
        "Logins:",
        "admin / admin-demo-password",
        "Demo client_id:",
        "Demo client_secret: cs_",
    ):
        assert expected in summary
    assert summary.rstrip().endswith("=" * 72)


def test_the_demo_server_prints_the_summary_after_djangos_banner(settings):
    from config.management.commands.demo_server import Command

    settings.DEBUG = True
    command = Command(stdout=StringIO())
    command.demo_summary = "SUMMARY"
    command.addr, command.port, command._raw_ipv6, command.protocol = "127.0.0.1", "8000", False, "http"
    command.on_bind("8000")
    printed = command.stdout._out.getvalue()
    assert printed.index("Starting development server") < printed.index("SUMMARY")
    assert printed.rstrip().endswith("SUMMARY")
