"""`manage.py signingkey create|rotate|list|retire`: the server's signing keys (signing.keys).

Prints JSON (one object per line for `list`): kid, algorithm, state, dates. Never a private part.
"""

import json
from dataclasses import asdict

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from oauthclients.exceptions import ApplicationError
from signing import keys
from signing.models import SigningKey, SigningKeyAlgorithm


class Command(BaseCommand):
    help = "Create, rotate, list and retire the keys this server signs tokens with (JSON out)."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="subcommand", required=True, metavar="COMMAND")
        create = commands.add_parser("create", help="Make a key that signs from now (the first of its algorithm).")
        create.add_argument("--alg", choices=SigningKeyAlgorithm.values, default=SigningKeyAlgorithm.ES256)
        rotate = commands.add_parser(
            "rotate",
            help="Publish a new key now; it takes over signing after OAUTH_SIGNING_KEY_PUBLISH_AHEAD seconds.",
        )
        rotate.add_argument("--alg", choices=SigningKeyAlgorithm.values, default=SigningKeyAlgorithm.ES256)
        commands.add_parser("list", help="Every key, newest first, with its state (signing, published, expired).")
        retire = commands.add_parser(
            "retire", help="Stop signing with a key now (it stays published until its tokens expire)."
        )
        retire.add_argument("kid")

    def handle(self, *args, subcommand, **options):
        try:
            result = getattr(self, "do_" + subcommand)(**options)
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        for item in result if isinstance(result, list) else [result]:
            self.stdout.write(json.dumps(item))

    @staticmethod
    def _state(key: SigningKey) -> dict:
        return asdict(keys.KeyState.of(key))

    def do_create(self, *, alg, **_):
        return self._state(keys.signing_key_create(algorithm=alg))

    def do_rotate(self, *, alg, **_):
        return self._state(keys.signing_key_rotate(algorithm=alg))

    def do_list(self, **_):
        return [self._state(key) for key in SigningKey.objects.all()]

    def do_retire(self, *, kid, **_):
        return self._state(keys.signing_key_retire(kid=kid))
