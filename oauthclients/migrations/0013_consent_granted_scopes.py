"""Consent keeps what the last Allow granted in columns (skipping the consent page reads them);
filled for existing consents from the latest `grant.authorized` audit event, which until now was
read back as state."""

from django.db import migrations, models


def fill_from_the_audit_trail(apps, schema_editor):
    Consent = apps.get_model("oauthclients", "Consent")
    ClientAuditEvent = apps.get_model("oauthclients", "ClientAuditEvent")
    for consent in Consent.objects.iterator():
        last = (
            ClientAuditEvent.objects.filter(client_id=consent.client_id, user_id=consent.user_id)
            .filter(action="grant.authorized")
            .order_by("-created", "-id")
            .values_list("detail", flat=True)
            .first()
        )
        if not isinstance(last, dict):
            continue  # nothing known to be granted: the page is shown again, as before
        consent.scope = " ".join(str(name) for name in last.get("scopes") or [])
        consent.unrestricted = last.get("unrestricted") is True
        consent.save(update_fields=["scope", "unrestricted"])


class Migration(migrations.Migration):
    dependencies = [
        ("oauthclients", "0012_jwt_access_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="consent",
            name="scope",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.AddField(
            model_name="consent",
            name="unrestricted",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(fill_from_the_audit_trail, migrations.RunPython.noop),
    ]
