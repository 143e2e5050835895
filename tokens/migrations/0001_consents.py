"""The standing consent moves from the registry (oauthclients) to this app.

Only Django's state moves: the table keeps its name (`db_table`), so no row is copied, and its
constraints and indexes stay as they are. The content type moves with the model, so that admin
history and permissions follow it; on a new database there is none yet (content types are made
after `migrate`), so nothing is updated.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

MOVED = ("consent",)


def content_types_move(from_app: str, to_app: str):
    def move(apps, schema_editor):
        ContentType = apps.get_model("contenttypes", "ContentType")
        types = ContentType.objects.using(schema_editor.connection.alias)
        for model in MOVED:
            # A content type already made under the new label (by a `migrate` run with this state)
            # wins; the old one then names nothing and `remove_stale_contenttypes` may drop it.
            if not types.filter(app_label=to_app, model=model).exists():
                types.filter(app_label=from_app, model=model).update(app_label=to_app)

    return move


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("oauthclients", "0023_signing_models_moved_to_signing"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Consent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("first_authorized_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("last_authorized_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("scope", models.TextField(blank=True, default="")),
                        ("unrestricted", models.BooleanField(default=False)),
                        (
                            "client",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="consents",
                                to=settings.OAUTH2_PROVIDER_APPLICATION_MODEL,
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="consents",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "oauthclients_consent",
                        "constraints": [
                            models.UniqueConstraint(fields=("user", "client"), name="consent_one_per_user_and_client")
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(
            content_types_move("oauthclients", "tokens"), content_types_move("tokens", "oauthclients"), elidable=False
        ),
    ]
