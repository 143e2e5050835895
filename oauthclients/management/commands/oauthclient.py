"""`manage.py oauthclient`: the client registry for administrators and automation, as JSON.

Every change goes through `oauthclients.services`. Failures raise CommandError, which Django
prints on stderr with a non-zero exit status (no traceback unless --traceback is given).
"""

import json
import logging
import re
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from oauthclients import selectors, services
from oauthclients.exceptions import ApplicationError
from oauthclients.exchangetargets import client_exchange_targets_set, exchange_target_uris
from oauthclients.models import ClientKind, ClientStatus, IdTokenAlgorithm, OAuthClient

_SCOPE_SEPARATORS = re.compile(r"[\s,]+")


def split_scopes(values: list[str]) -> list[str]:
    """`--scope "A B" --scope C,D` -> [A, B, C, D]; the service checks the names."""
    return [name for value in values for name in _SCOPE_SEPARATORS.split(value) if name]


def origin_of(uri: str) -> str:
    """`https://app.example.com:8443/cb?x` -> `https://app.example.com:8443/`; "" if it has none."""
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}/" if parts.scheme and parts.netloc else ""


def _iso(moment):
    return moment.isoformat() if moment else None


def client_json(client: OAuthClient) -> dict:
    """Everything about a client except credentials: secrets appear by id and hint only."""
    return {
        "client_id": client.client_id,
        "name": client.name,
        "owner": client.owner.get_username(),
        "kind": client.client_type,
        "status": client.status,
        "resource_uri": client.resource_uri or None,
        "token_format": client.token_format,
        "rejection_reason": client.rejection_reason,
        "reviewed_by": client.reviewed_by.get_username() if client.reviewed_by else None,
        "reviewed_at": _iso(client.reviewed_at),
        "legacy": client.is_legacy,
        "scopes": client.scope_list,
        "redirect_uris": client.redirect_uri_list,
        "post_logout_redirect_uris": client.post_logout_redirect_uri_list,
        "website_url": client.website_url,
        "purpose": client.purpose,
        "id_token_signed_response_alg": client.id_token_signed_response_alg,
        # manual, dcr (RFC 7591) or cimd; a dcr client without a token cannot manage its registration
        # (RFC 7592) until issue-registration-token gives it one.
        "registration_source": client.registration_source,
        "registration_token_issued": bool(client.registration_token_digest),
        "secrets": [
            {
                "id": secret.pk,
                "hint": secret.hint,
                "created": _iso(secret.created),
                "last_used": _iso(secret.last_used_at),
                "revoked": _iso(secret.revoked_at),
            }
            # .all() (Meta ordering: created, id) so that `list` can prefetch them.
            for secret in client.secrets.all()
        ],
        "created": _iso(client.created),
        "updated": _iso(client.updated),
        # Pass it to `approve --expect-digest` to approve exactly the version printed here.
        "review_digest": client.review_digest(),
    }


class Refused(CommandError):
    """A refusal, printed as `oauthclient: message` (Django prefixes the class name), exit status 1."""


Refused.__name__ = Refused.__qualname__ = "oauthclient"


def _validation_text(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "\n".join(f"{field}: {message}" for field, messages in exc.message_dict.items() for message in messages)
    return "\n".join(exc.messages)


class Command(BaseCommand):
    help = (
        "Register, review and inspect OAuth clients and manage their secrets. Every subcommand "
        "prints JSON on stdout, one object per line (`list`: one per client, oldest first); errors go "
        "to stderr as one line with exit status 1. "
        "Run `manage.py oauthclient SUBCOMMAND --help` for each one."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--actor",
            metavar="USERNAME",
            help="The user the audit log records for the change (give it before the subcommand). "
            "Without it the change is recorded as made by the system, except that `create` "
            "records the owner as the one who registered the client (services.client_create).",
        )
        commands = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")

        create = commands.add_parser(
            "create",
            help="Register a client.",
            description="Register a client (pending unless --approve). Prints "
            '{"client_id", "client_secret", "secret_id", "kind", "status"}. A confidential client or a '
            "resource server gets its first secret, printed only this once (it is stored as a digest); "
            "for a public client client_secret and secret_id are null. With --resource-server, only "
            "--owner and --name are given: a resource server is approved at once and can only "
            "introspect tokens.",
        )
        create.add_argument("--owner", required=True, metavar="USERNAME", help="The developer who owns the client.")
        create.add_argument("--name", required=True)
        create.add_argument(
            "--redirect-uri",
            dest="redirect_uris",
            action="append",
            default=[],
            metavar="URI",
            help="Repeat for each URI (1 to 10). https, or http on localhost/127.0.0.1/[::1] only. "
            "Required unless --resource-server.",
        )
        create.add_argument(
            "--post-logout-redirect-uri",
            dest="post_logout_redirect_uris",
            action="append",
            default=[],
            metavar="URI",
            help="Repeatable (up to 10), optional: where OpenID Connect logout may send users besides the "
            "redirect URIs; the same rules as --redirect-uri.",
        )
        create.add_argument(
            "--scope",
            dest="scopes",
            action="append",
            default=[],
            metavar="SCOPE",
            help="Repeatable; each value may hold several names separated by spaces or commas. "
            "At least one unless --legacy.",
        )
        create.add_argument("--website", metavar="URL", help="Defaults to the origin of the first redirect URI.")
        create.add_argument("--purpose", default="", metavar="TEXT")
        create.add_argument("--public", action="store_true", help="A public client (PKCE, no secret).")
        create.add_argument("--legacy", action="store_true", help="A legacy client: no scopes, tokens unrestricted.")
        create.add_argument("--approve", action="store_true", help="Approve it at once.")
        create.add_argument(
            "--resource-server",
            action="store_true",
            help="An API service that verifies tokens by introspection (RFC 7662): no redirect URI, "
            "no scope, no grant; approved at once.",
        )
        create.add_argument(
            "--resource-uri",
            metavar="URL",
            help="With --resource-server: the service's resource URI (its OAUTH_RESOURCE_URI), which apps "
            "name in `resource` (RFC 8707) to get tokens bound to it.",
        )
        create.add_argument(
            "--token-format",
            choices=["opaque", "jwt"],
            help="With --resource-server and --resource-uri: the access tokens bound to it are RFC 9068 JWTs it "
            "verifies itself (jwt), or opaque tokens it introspects (opaque, the default).",
        )

        approve = commands.add_parser(
            "approve",
            help="Approve a pending client.",
            description="Approve a pending client. With --expect-digest (the review_digest that `show` "
            "printed), nothing is approved if the client changed since you looked at it.",
        )
        approve.add_argument("client_id")
        approve.add_argument(
            "--expect-digest",
            default=None,
            help="The review_digest printed by `show`: approve only that version of the client.",
        )

        reject = commands.add_parser("reject", help="Reject a pending or approved client; its tokens stop working.")
        reject.add_argument("client_id")
        reject.add_argument("--reason", required=True, metavar="TEXT", help="Shown to the owner.")

        show = commands.add_parser("show", help="Print one client (secrets by id and hint only).")
        show.add_argument("client_id")

        listing = commands.add_parser("list", help="Print every client, newest first, as a JSON array.")
        listing.add_argument("--status", choices=ClientStatus.values)

        add_secret = commands.add_parser(
            "add-secret",
            help="Create a secret (at most 2 active).",
            description='Prints {"client_id", "secret_id", "client_secret"}; the secret is shown only this once.',
        )
        add_secret.add_argument("client_id")

        revoke_secret = commands.add_parser(
            "revoke-secret", help="Revoke a secret at once (never the last active one)."
        )
        revoke_secret.add_argument("client_id")
        revoke_secret.add_argument("secret_id", type=int)

        set_scopes = commands.add_parser(
            "set-scopes",
            help="Replace a client's scopes; on a legacy client, migrate it to scopes.",
            description="Replace the client's scopes. For a legacy client this is the last step of moving it "
            "to scopes: do it only after the application sends the scope parameter in its authorization URL, "
            "or users following an old URL will fail to authorize.",
        )
        set_scopes.add_argument("client_id")
        set_scopes.add_argument("scopes", nargs="+", metavar="SCOPE")

        id_token_alg = commands.add_parser(
            "set-id-token-alg",
            help="How the client's OpenID Connect ID tokens are signed: RS256 (the default) or ES256.",
        )
        id_token_alg.add_argument("client_id")
        id_token_alg.add_argument("algorithm", choices=IdTokenAlgorithm.values)

        token_format = commands.add_parser(
            "set-token-format",
            help="A resource server's access tokens from now on: jwt (RFC 9068, verified by the service) or opaque.",
        )
        token_format.add_argument("client_id")
        token_format.add_argument("token_format", choices=["opaque", "jwt"])

        commands.add_parser(
            "name-skeletons",
            help="Store every client's name skeleton again (after an upgrade of the system's ICU). "
            'Prints {"updated": N}.',
        )

        registration_token = commands.add_parser(
            "issue-registration-token",
            help="Give a client that registered itself (RFC 7591) a new registration access token (RFC 7592).",
            description="For a client that registered itself before registration access tokens existed (it has "
            "none, and cannot read, update or delete its registration), or that lost its token: any earlier one "
            'stops working. Prints {"client_id", "registration_client_uri", "registration_access_token", '
            '"replaced"}; the token is shown only this once (it is stored as a digest). Audited.',
        )
        registration_token.add_argument("client_id")

        exchange_targets = commands.add_parser(
            "set-exchange-targets",
            help="The resource servers a resource server may exchange users' tokens toward (RFC 8693); none: none.",
        )
        exchange_targets.add_argument("client_id")
        exchange_targets.add_argument("resource_uris", nargs="*", metavar="RESOURCE_URI")

    def handle(self, *args, subcommand, actor=None, **options):
        # The audit trail is in the database (and the server's log); on the command line, stderr
        # stays for errors (and the review mail of the console backend) unless -v 2 or more.
        if options.get("verbosity", 1) < 2:
            logging.getLogger("audit").setLevel(logging.WARNING)
        actor = self._user(actor, role="actor") if actor else None
        handler = getattr(self, "do_" + subcommand.replace("-", "_"))
        try:
            result = handler(actor=actor, **options)
        except ValidationError as exc:
            raise Refused(_validation_text(exc)) from None
        except ApplicationError as exc:
            raise Refused(exc.message) from None
        # One JSON object per line (JSON Lines): `list` prints one per client, the rest one in all.
        for item in result if isinstance(result, list) else [result]:
            self.stdout.write(json.dumps(item))

    def _user(self, username: str, *, role: str):
        try:
            return get_user_model().objects.get_by_natural_key(username)
        except get_user_model().DoesNotExist:
            raise Refused(f"Unknown {role}: no user named {username!r}.") from None

    def _client(self, client_id: str) -> OAuthClient:
        client = selectors.client_get(client_id=client_id)
        if client is None:
            raise Refused(f"Unknown client: no OAuth client with client_id {client_id!r}.")
        return client

    def do_name_skeletons(self, *, actor, **options):
        return {"updated": services.client_name_skeletons_refresh()}

    def do_create(
        self, *, actor, owner, name, redirect_uris, scopes, website, purpose, public, legacy, approve, **options
    ):
        owner = self._user(owner, role="owner")
        if options.get("resource_server"):
            return self._create_resource_server(
                actor=actor,
                owner=owner,
                name=name,
                resource_uri=options.get("resource_uri") or "",
                token_format=options.get("token_format") or "opaque",
                redirect_uris=redirect_uris,
                post_logout_redirect_uris=options.get("post_logout_redirect_uris") or [],
                scopes=scopes,
                website=website,
                purpose=purpose,
                public=public,
                legacy=legacy,
            )
        if options.get("resource_uri") or options.get("token_format"):
            raise Refused("--resource-uri and --token-format are for resource servers only: add --resource-server.")
        if not redirect_uris:
            raise Refused("--redirect-uri is required (at least one) unless --resource-server is given.")
        with transaction.atomic():
            created = services.client_create(
                owner=owner,
                name=name,
                website_url=website if website is not None else origin_of(redirect_uris[0]),
                kind=ClientKind.PUBLIC if public else ClientKind.CONFIDENTIAL,
                redirect_uris=redirect_uris,
                post_logout_redirect_uris=options.get("post_logout_redirect_uris") or [],
                scopes=split_scopes(scopes),
                purpose=purpose,
                is_legacy=legacy,
                approve=approve,
                # The reviewer recorded is this actor (None without --actor: nobody), never the
                # owner; the owner is recorded as the creator only when no --actor is given.
                actor=actor,
            )
            client = created.client
        return {
            "client_id": client.client_id,
            "client_secret": created.secret.plaintext if created.secret else None,
            "secret_id": created.secret.secret.pk if created.secret else None,
            "kind": client.client_type,
            "status": client.status,
        }

    def _create_resource_server(self, *, actor, owner, name, resource_uri, token_format, **app_only) -> dict:
        flags = {
            "redirect_uris": "--redirect-uri",
            "post_logout_redirect_uris": "--post-logout-redirect-uri",
            "scopes": "--scope",
        }
        given = sorted(
            flags.get(option, "--" + option) for option, value in app_only.items() if value not in (None, [], "", False)
        )
        if given:
            raise Refused(f"A resource server has no {', '.join(given)}: give only --owner, --name and --resource-uri.")
        created = services.resource_server_create(
            owner=owner, name=name, resource_uri=resource_uri, actor=actor, token_format=token_format
        )
        return {
            "client_id": created.client.client_id,
            "client_secret": created.secret.plaintext,
            "secret_id": created.secret.secret.pk,
            "kind": created.client.client_type,
            "status": created.client.status,
            "resource_uri": created.client.resource_uri or None,
            "token_format": created.client.token_format,
        }

    def do_approve(self, *, actor, client_id, expect_digest=None, **_):
        client = services.client_approve(client=self._client(client_id), actor=actor, expected_digest=expect_digest)
        return client_json(client)

    def do_reject(self, *, actor, client_id, reason, **_):
        return client_json(services.client_reject(client=self._client(client_id), actor=actor, reason=reason))

    def do_show(self, *, client_id, **_):
        return client_json(self._client(client_id))

    def do_list(self, *, status, **_):
        # Oldest first, like the admin's review queue: first come, first served.
        clients = selectors.client_list(status=status).order_by("created", "id").prefetch_related("secrets")
        return [client_json(client) for client in clients]

    def do_add_secret(self, *, actor, client_id, **_):
        issued = services.client_secret_create(client=self._client(client_id), actor=actor)
        return {"client_id": client_id, "secret_id": issued.secret.pk, "client_secret": issued.plaintext}

    def do_revoke_secret(self, *, actor, client_id, secret_id, **_):
        secret = services.client_secret_revoke(client=self._client(client_id), secret_id=secret_id, actor=actor)
        return {"client_id": client_id, "secret_id": secret.pk, "hint": secret.hint, "revoked": _iso(secret.revoked_at)}

    def do_set_scopes(self, *, actor, client_id, scopes, **_):
        return client_json(
            services.client_set_scopes(client=self._client(client_id), scopes=split_scopes(scopes), actor=actor)
        )

    def do_set_token_format(self, *, actor, client_id, token_format, **_):
        return client_json(
            services.resource_server_token_format_set(
                client=self._client(client_id), token_format=token_format, actor=actor
            )
        )

    def do_issue_registration_token(self, *, actor, client_id, **_):
        issued = services.client_registration_token_issue(client=self._client(client_id), actor=actor)
        return {
            "client_id": client_id,
            "registration_client_uri": issued.client.registration_client_uri,
            "registration_access_token": issued.registration_token,
            "replaced": issued.replaced,
        }

    def do_set_exchange_targets(self, *, actor, client_id, resource_uris, **_):
        client = client_exchange_targets_set(client=self._client(client_id), resource_uris=resource_uris, actor=actor)
        return client_json(client) | {"exchange_targets": exchange_target_uris(client=client)}

    def do_set_id_token_alg(self, *, actor, client_id, algorithm, **_):
        return client_json(
            services.client_id_token_algorithm_set(client=self._client(client_id), algorithm=algorithm, actor=actor)
        )
