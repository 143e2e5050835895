"""The signing keys and token status lists belong to `signing` now (signing/migrations/0001_keys_and_status_lists.py):
they leave this app's state; their tables stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("oauthclients", "0022_registration_access_token_audit"),
        ("signing", "0001_keys_and_status_lists"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="SigningKey"),
                migrations.DeleteModel(name="StatusCounter"),
                migrations.DeleteModel(name="StatusList"),
                migrations.DeleteModel(name="StatusRevocation"),
            ],
            database_operations=[],
        ),
    ]
