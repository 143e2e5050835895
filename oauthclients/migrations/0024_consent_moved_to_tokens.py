"""The standing consent belongs to `tokens` now (tokens/migrations/0001_consents.py): it leaves this
app's state; its table stays as it is."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("oauthclients", "0023_signing_models_moved_to_signing"),
        ("tokens", "0001_consents"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="Consent")],
            database_operations=[],
        ),
    ]
