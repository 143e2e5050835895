"""What the upgraded database holds, read by the NEW code: printed as JSON for
tests/upgrade/test_upgrade_from_previous_release.py.

Run by the test as `python -m tests.upgrade.upgraded_facts FIXTURE.json` with the production settings
and DATABASE_URL naming the upgraded database (the server's environment). Only what cannot be seen
from the outside is read here: content types, permissions, password hashes, sealed secrets, links.
Models are found by class name, so that this keeps working after a model moves to another app.
"""

import json
import sys


def model(name: str):
    from django.apps import apps

    found = [m for m in apps.get_models() if m.__name__ == name and not m._meta.proxy]
    assert len(found) == 1, (name, found)
    return found[0]


def label(m) -> str:
    return f"{m._meta.app_label}.{m._meta.model_name}"


def facts(fixture: dict) -> dict:
    from allauth.account.models import EmailAddress
    from allauth.mfa.adapter import get_adapter as mfa_adapter
    from allauth.mfa.models import Authenticator
    from allauth.socialaccount.adapter import get_adapter as social_adapter
    from allauth.socialaccount.models import SocialAccount
    from django.contrib.admin.models import LogEntry
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import identify_hasher
    from django.contrib.contenttypes.models import ContentType

    User = get_user_model()
    users, upstream = fixture["users"], fixture["upstream"]

    def entry_seen(recorded: dict) -> dict:
        entry = LogEntry.objects.select_related("content_type").get(pk=recorded["log_entry"])
        edited_model = entry.content_type.model_class()  # None for a content type no model answers to
        edited = edited_model._base_manager.filter(pk=entry.object_id).first() if edited_model else None
        return {
            "content_type": f"{entry.content_type.app_label}.{entry.content_type.model}",
            "model": label(model(recorded["model"])),
            "edited_object": str(edited.pk) if edited else None,
            "edited_class": type(edited).__name__ if edited else None,
            "change_message": entry.change_message,
        }

    def permissions_held(name: str) -> dict:
        auditor = User.objects.get(pk=users["auditor"]["pk"])
        app, model_name = model(name)._meta.app_label, model(name)._meta.model_name
        return {
            "view (group)": auditor.has_perm(f"{app}.view_{model_name}"),
            "change (user)": auditor.has_perm(f"{app}.change_{model_name}"),
            "delete (never granted)": auditor.has_perm(f"{app}.delete_{model_name}"),
        }

    def upstream_seen() -> dict:
        link = SocialAccount.objects.filter(provider=upstream["slug"], uid=upstream["sub"]).first()
        address = EmailAddress.objects.filter(email=users["ada"]["email"], verified=True).first()
        policies = model("AssertionPolicy").objects.filter(
            provider__slug=upstream["slug"], client__client_id=fixture["clients"]["agent"]["client_id"]
        )
        return {
            "linked_user": link.user_id if link else None,
            "verified_email_user": address.user_id if address else None,
            "policy_scopes": [sorted(policy.scopes) for policy in policies],
        }

    def upstream_app() -> dict:
        # How a sign-in through the provider gets its client secret: allauth's adapter, ours behind it.
        (app,) = social_adapter().list_apps(None, provider=upstream["slug"])
        return {"client_secret": app.secret, "server_url": app.settings["server_url"]}

    def totp_secret() -> str:
        totp = Authenticator.objects.get(user_id=users["admin"]["pk"], type=Authenticator.Type.TOTP)
        return mfa_adapter().decrypt(totp.data["secret"])

    def passkeys() -> list[str]:
        stored = Authenticator.objects.filter(user_id=users["developer"]["pk"], type=Authenticator.Type.WEBAUTHN)
        return [authenticator.wrap().authenticator_data.credential_data.credential_id.hex() for authenticator in stored]

    return {
        "stale_content_types": read(
            lambda: sorted(f"{ct.app_label}.{ct.model}" for ct in ContentType.objects.all() if ct.model_class() is None)
        ),
        "admin_history": {recorded["model"]: read(entry_seen, recorded) for recorded in fixture["admin_history"]},
        "permissions": {name: read(permissions_held, name) for name in fixture["permissions"]["group"]},
        "password_hashers": {
            name: read(lambda pk: identify_hasher(User.objects.get(pk=pk).password).algorithm, record["pk"])
            for name, record in users.items()
            if "password" in record
        },
        "upstream": read(upstream_seen),
        "upstream_app": read(upstream_app),
        "totp_secret": read(totp_secret),
        "passkeys": read(passkeys),
        "audit": {
            name: read(lambda name: sorted(model(name).objects.values_list("pk", flat=True)), name)
            for name in fixture["audit"]
        },
    }


def read(function, *args):
    """One fact, or what went wrong reading it: each fact fails its own assertion in the test."""
    try:
        return function(*args)
    except Exception as exc:  # noqa: BLE001 - reported to the test as the fact
        return f"unreadable: {type(exc).__name__}: {exc}"


def main() -> None:
    import django

    django.setup()
    with open(sys.argv[1]) as fixture:
        print(json.dumps(facts(json.load(fixture))))


if __name__ == "__main__":
    main()
