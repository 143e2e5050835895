"""`manage.py seed_demo`: the demo cast for `make run`. Creates only what is missing."""

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.test.utils import override_settings

from oauthclients import selectors, services
from oauthclients.models import ClientKind, OAuthClient
from signing import keys
from signing.models import SigningKey, SigningKeyAlgorithm

# Well-known passwords: this is why the command refuses to run unless DEBUG is on.
DEMO_USERS = (
    # (username, password, is administrator)
    ("admin", "admin-demo-password", True),
    ("developer", "developer-demo-password", False),
    ("enduser", "enduser-demo-password", False),
)
DEMO_CLIENT = {
    "name": "Demo Calendar App",
    "kind": ClientKind.CONFIDENTIAL,
    "scopes": ["PROFILE_READ", "PROFILE_WRITE", "BOOKING_READ", "SCHEDULE_READ"],
    "redirect_uris": ["http://localhost:8765/callback", "http://127.0.0.1:8765/callback"],
    "website_url": "http://localhost:8765/",
    "purpose": "Demo client for trying the authorization-code flow locally.",
}


class Command(BaseCommand):
    help = (
        "Create the demo administrator, developer (with an approved demo client) and end user, "
        "whichever are missing. Runs only with DEBUG on, since the passwords are public."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--force", action="store_true", help="Run even with DEBUG off (never on a real deployment)."
        )

    def _signing_keys(self) -> list[str]:
        """One signing key per algorithm on first start (`manage.py signingkey` manages them).
        Without OAUTH_SIGNING_KEY_ENCRYPTION_KEY (debug derives one) none is made, and it says so."""
        made = []
        for algorithm in SigningKeyAlgorithm.values:
            if not SigningKey.objects.filter(algorithm=algorithm).exists():
                try:
                    made.append(keys.signing_key_create(algorithm=algorithm).kid)
                except ImproperlyConfigured as exc:
                    self.stderr.write(f"No signing key made: {exc}")
                    break
        return made

    def handle(self, *args, force=False, **options):
        if not settings.DEBUG and not force:
            raise CommandError(
                "seed_demo creates users with publicly known passwords, so it runs only with DEBUG on "
                "(DJANGO_DEBUG=1). Use --force to run it anyway."
            )
        self.existing_users = []
        # Seeding is not news: its audit lines and its review mails (to the demo's own developer)
        # stay out of the terminal, so that the summary below is what a newcomer reads.
        audit_log = logging.getLogger("audit")
        level = audit_log.level
        audit_log.setLevel(logging.WARNING)
        try:
            with (
                override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"),
                transaction.atomic(),
            ):
                users = {name: self._user(name, password, admin) for name, password, admin in DEMO_USERS}
                client, secret = self._client(developer=users["developer"], admin=users["admin"])
                docs_client = self._docs_client(admin=users["admin"])
                made_keys = self._signing_keys()
        finally:
            audit_log.setLevel(level)

        self.stdout.write("")
        self.stdout.write("=" * 72)
        self.stdout.write(f"The demo is ready at {settings.OAUTH_ISSUER}/")
        self.stdout.write("")
        self.stdout.write("Logins:")
        for username, password, _ in DEMO_USERS:
            self.stdout.write(f"  {username} / {password}")
        if self.existing_users:
            self.stdout.write(f"  ({', '.join(self.existing_users)} already existed and kept their own passwords.)")
        self.stdout.write(f"Admin:              {settings.OAUTH_ISSUER}/admin/")
        self.stdout.write(f"Developer settings: {settings.OAUTH_ISSUER}/settings/developer/")
        self.stdout.write(f"Demo client_id:     {client.client_id} ({client.get_status_display().lower()})")
        if secret is not None:
            # Printed this once only: the database keeps a digest.
            self.stdout.write(f"Demo client_secret: {secret.plaintext}")
            self.stdout.write("  It is stored only as a digest and will not be shown again.")
        else:
            self.stdout.write("Demo client_secret: not shown (it was printed when the client was created).")
        self.stdout.write(
            f"  For another one: DJANGO_DEBUG=1 .venv/bin/python manage.py oauthclient add-secret {client.client_id}"
        )
        if docs_client is not None:
            self.stdout.write(
                f"API docs:           {settings.OAUTH_ISSUER}/v2/docs/ (Authorize: client_id {docs_client.client_id}, "
                "PKCE, no secret)"
            )
        if made_keys:
            self.stdout.write(
                f"Signing keys:       {len(made_keys)} created, published at {settings.OAUTH_ISSUER}"
                f"{settings.OAUTH_JWKS_PATH} (manage.py signingkey list)"
            )
        self.stdout.write("=" * 72)

    def _user(self, username: str, password: str, admin: bool):
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is not None:
            self.existing_users.append(username)
            self.stdout.write(f"User {username} already exists; left as it is.")
            return user
        if admin:
            user = User.objects.create_superuser(username=username, email=f"{username}@example.com", password=password)
        else:
            user = User.objects.create_user(username=username, email=f"{username}@example.com", password=password)
        self.stdout.write(f"Created user {username}.")
        return user

    def _docs_client(self, *, admin):
        """The public client Swagger UI authorizes as (settings.OAUTH_DOCS_CLIENT_ID), owned by the admin."""
        client_id = settings.OAUTH_DOCS_CLIENT_ID
        existing = selectors.client_get(client_id=client_id)
        if existing is not None:
            return existing
        try:
            created = self._create_docs_client(admin=admin)
        except ValidationError as exc:
            # An issuer on plain http other than loopback cannot have a redirect URI (SECURITY.md).
            self.stdout.write(f"API docs client not created: {'; '.join(exc.messages)}")
            return None
        # A fixed, well-known client_id, so that the docs page can name it (a public client has no secret).
        OAuthClient.objects.filter(pk=created.client.pk).update(client_id=client_id)
        created.client.client_id = client_id
        self.stdout.write(f"Created the API docs client {client_id}.")
        return services.client_approve(client=created.client, actor=admin)

    @staticmethod
    def _create_docs_client(*, admin) -> services.ClientCreated:
        return services.client_create(
            owner=admin,
            actor=admin,
            name="API docs (Swagger UI)",
            kind=ClientKind.PUBLIC,
            scopes=["PROFILE_READ", "PROFILE_WRITE"],
            redirect_uris=[f"{settings.OAUTH_ISSUER}/v2/docs/oauth2-redirect.html"],
            website_url=f"{settings.OAUTH_ISSUER}/v2/docs/",
            purpose="Try the API from its documentation page.",
        )

    def _client(self, *, developer, admin):
        client = selectors.client_list_for_owner(owner=developer).filter(name=DEMO_CLIENT["name"]).first()
        if client is not None:
            self.stdout.write(f"Client {client.name} already exists; left as it is.")
            return client, None
        # The developer registers it, the administrator approves it, as in the real flow.
        created = services.client_create(owner=developer, actor=developer, **DEMO_CLIENT)
        client = services.client_approve(client=created.client, actor=admin)
        self.stdout.write(f"Created and approved client {client.name}.")
        return client, created.secret
