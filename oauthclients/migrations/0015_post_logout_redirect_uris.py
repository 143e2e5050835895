from django.db import migrations, models


def forget_unreviewed(apps, schema_editor):
    # DOT's column was never written by any path of ours and never read: whatever a row holds
    # there was reviewed by nobody, and from now on it would be a place to send users after logout.
    apps.get_model("oauthclients", "OAuthClient").objects.exclude(post_logout_redirect_uris="").update(
        post_logout_redirect_uris=""
    )


class Migration(migrations.Migration):
    dependencies = [
        ("oauthclients", "0014_client_web_origins"),
    ]

    operations = [
        migrations.AlterField(
            model_name="oauthclient",
            name="post_logout_redirect_uris",
            field=models.TextField(
                blank=True,
                default="",
                help_text="Where the app may send users after logging them out (besides its redirect URIs).",
                verbose_name="post-logout redirect URIs",
            ),
        ),
        migrations.RunPython(forget_unreviewed, migrations.RunPython.noop),
    ]
