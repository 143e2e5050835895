"""manage.py identityprovider add|list|remove: upstream OpenID Connect providers, JSON on stdout.

The client secret is read from standard input or a file (--client-secret-file, `-` for stdin),
never from the command line, where `ps` and shell history would keep it.
"""

import json
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from accounts.models import IdentityProvider
from accounts.services import identity_provider_add, identity_provider_redirect_uri, identity_provider_remove


def _shown(provider: IdentityProvider) -> dict:
    return {
        "slug": provider.slug,
        "name": provider.name,
        "issuer": provider.issuer,
        "client_id": provider.client_id,
        "domains": provider.domains,
        "enforce": provider.enforce,
        "redirect_uri": identity_provider_redirect_uri(provider=provider, issuer=settings.OAUTH_ISSUER),
    }


class Command(BaseCommand):
    help = "Add, list and remove upstream OpenID Connect identity providers (docs/accounts.md)."
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        # No abbreviations: `--client-secret VALUE` must not pass for `--client-secret-file`.
        add = sub.add_parser("add", allow_abbrev=False)
        add.add_argument("--name", required=True)
        add.add_argument("--issuer", required=True)
        add.add_argument("--client-id", required=True)
        add.add_argument("--client-secret-file", default="-", help="a file holding the secret; - (default) for stdin")
        add.add_argument("--domain", action="append", default=[], dest="domains")
        add.add_argument("--enforce", action="store_true")
        sub.add_parser("list")
        remove = sub.add_parser("remove")
        remove.add_argument("slug")

    def handle(self, *args, **options):
        action = options["action"]
        if action == "list":
            result = [_shown(provider) for provider in IdentityProvider.objects.all()]
        elif action == "remove":
            try:
                identity_provider_remove(slug=options["slug"])
            except IdentityProvider.DoesNotExist:
                raise CommandError(f"no identity provider {options['slug']!r}") from None
            result = {"removed": options["slug"]}
        else:
            if options["enforce"] and not options["domains"]:
                raise CommandError("--enforce needs at least one --domain")
            path = options["client_secret_file"]
            stream = self.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
            with stream:
                secret = stream.readline().strip()
            if not secret:
                raise CommandError("no client secret on standard input (or in --client-secret-file)")
            if IdentityProvider.objects.filter(issuer=options["issuer"].rstrip("/")).exists():
                raise CommandError(f"an identity provider for {options['issuer']} exists already")
            provider = identity_provider_add(
                name=options["name"],
                issuer=options["issuer"],
                client_id=options["client_id"],
                client_secret=secret,
                domains=options["domains"],
                enforce=options["enforce"],
            )
            result = _shown(provider)
        self.stdout.write(json.dumps(result, indent=2))

    def execute(self, *args, **options):
        self.stdin = options.pop("stdin", sys.stdin)
        return super().execute(*args, **options)
