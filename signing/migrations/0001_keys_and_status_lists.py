"""The signing keys and token status lists move from the registry (oauthclients) to this app.

Only Django's state moves: the tables keep their names (`db_table`), so no row is copied, no
trigger or sequence is touched (signing.statuslist's triggers name the tables, not the models).
The content types move with the models, so that admin history and permissions follow them; on a
new database there are none yet (they are made after `migrate`), so nothing is updated.
"""

import django.utils.timezone
from django.db import migrations, models

MOVED = ("signingkey", "statuscounter", "statuslist", "statusrevocation")


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
        ("oauthclients", "0022_registration_access_token_audit"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SigningKey",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("kid", models.CharField(editable=False, max_length=64, unique=True)),
                        (
                            "algorithm",
                            models.CharField(
                                choices=[("ES256", "ES256 (ECDSA P-256)"), ("RS256", "RS256 (RSA 2048)")], max_length=8
                            ),
                        ),
                        ("public_jwk", models.JSONField(editable=False)),
                        ("private_jwe", models.TextField(editable=False)),
                        ("created", models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                        ("signs_from", models.DateTimeField()),
                        ("retired_at", models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        "verbose_name": "signing key",
                        "db_table": "oauthclients_signingkey",
                        "ordering": ["-signs_from", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="StatusCounter",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("next_index", models.BigIntegerField(default=0)),
                    ],
                    options={
                        "db_table": "oauthclients_statuscounter",
                    },
                ),
                migrations.CreateModel(
                    name="StatusList",
                    fields=[
                        ("number", models.PositiveIntegerField(primary_key=True, serialize=False)),
                        ("size", models.PositiveIntegerField()),
                        ("last_issued", models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                    options={
                        "verbose_name": "token status list",
                        "db_table": "oauthclients_statuslist",
                    },
                ),
                migrations.CreateModel(
                    name="StatusRevocation",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("status_list", models.PositiveIntegerField()),
                        ("index", models.PositiveIntegerField()),
                    ],
                    options={
                        "db_table": "oauthclients_statusrevocation",
                        "constraints": [
                            models.UniqueConstraint(fields=("status_list", "index"), name="status_revocation_once")
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(
            content_types_move("oauthclients", "signing"), content_types_move("signing", "oauthclients"), elidable=False
        ),
    ]
