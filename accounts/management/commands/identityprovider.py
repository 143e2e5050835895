"""manage.py identityprovider add|list|remove|allow-assertions|deny-assertions: upstream OpenID
Connect providers, and which clients their ID-JAG assertions may reach (oauthflows.token.idjag); JSON on
stdout.

The client secret is read from standard input or a file (--client-secret-file, `-` for stdin),
never from the command line, where `ps` and shell history would keep it.
"""

import json
import sys

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext

from accounts.models import AssertionPolicy, IdentityProvider
from accounts.services import (
    identity_provider_add,
    identity_provider_assertions_allow,
    identity_provider_assertions_deny,
    identity_provider_get,
    identity_provider_redirect_uri,
    identity_provider_remove,
)
from oauthclients.models import OAuthClient


def _shown(provider: IdentityProvider) -> dict:
    return {
        "slug": provider.slug,
        "name": provider.name,
        "issuer": provider.issuer,
        "client_id": provider.client_id,
        "domains": provider.domains,
        "enforce": provider.enforce,
        "redirect_uri": identity_provider_redirect_uri(provider=provider, issuer=settings.OAUTH_ISSUER),
        "assertions": {
            policy.client.client_id: policy.scopes
            for policy in AssertionPolicy.objects.filter(provider=provider).select_related("client")
        },
    }


def _default_issuer_warning() -> str:
    # `make run PORT=…` sets OAUTH_ISSUER for its server; a command run beside it without that setting
    # prints the settings' default issuer, and a provider told that redirect URI breaks the sign-in.
    return gettext(
        "OAUTH_ISSUER is not set: the redirect_uri above is under the default issuer, %(issuer)s. If the "
        "server runs elsewhere (make run PORT=…), register the redirect URI it uses: run the command as "
        'make manage PORT=… ARGS="identityprovider list", or with OAUTH_ISSUER set as the server has it.'
    ) % {"issuer": settings.OAUTH_ISSUER}


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
        # ID-JAG (RFC 7523): which clients the provider's assertions may reach, and up to which scopes.
        allow = sub.add_parser("allow-assertions", allow_abbrev=False)
        allow.add_argument("name", help="the provider's slug or name")
        allow.add_argument("--client", action="append", required=True, dest="clients", metavar="CLIENT_ID")
        allow.add_argument("--scope", action="append", default=[], dest="scopes", help="default: the client's scopes")
        deny = sub.add_parser("deny-assertions", allow_abbrev=False)
        deny.add_argument("name")
        deny.add_argument("--client", action="append", required=True, dest="clients", metavar="CLIENT_ID")

    def handle(self, *args, **options):
        action = options["action"]
        if action in ("allow-assertions", "deny-assertions"):
            result = self._assertions(action, options)
        elif action == "list":
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
        if action in ("add", "list") and settings.DEBUG and not settings.OAUTH_ISSUER_FROM_ENVIRONMENT:
            self.stderr.write(_default_issuer_warning())

    def _assertions(self, action: str, options) -> dict:
        try:
            provider = identity_provider_get(name=options["name"])
        except IdentityProvider.DoesNotExist:
            raise CommandError(f"no identity provider {options['name']!r}") from None
        clients = []
        for client_id in options["clients"]:
            client = OAuthClient.objects.filter(client_id=client_id).first()
            if client is None:
                raise CommandError(f"no client {client_id!r}")
            clients.append(client)
        ended = {}
        for client in clients:
            if action == "deny-assertions":
                ended[client.client_id] = identity_provider_assertions_deny(provider=provider, client=client)
                continue
            try:
                identity_provider_assertions_allow(provider=provider, client=client, scopes=options["scopes"])
            except ValidationError as exc:
                raise CommandError("; ".join(exc.messages)) from None
        shown = _shown(IdentityProvider.objects.get(pk=provider.pk))
        return shown | ({"access_tokens_ended": ended} if ended else {})

    def execute(self, *args, **options):
        self.stdin = options.pop("stdin", sys.stdin)
        return super().execute(*args, **options)
