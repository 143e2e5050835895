"""Who a person is: the one rule for "which local account does this upstream identity name".

Both doors that take an identity from an organization's provider ask here, and nowhere else: the
sign-in through it (accounts.socialadapter) and its identity assertions (ID-JAG, oauthflows.token.idjag).

1. The (provider, `sub`) link that a single sign-on made, first.
2. Otherwise an email, only when the upstream vouches for it — `email_verified` is true (the JSON
   boolean, not a string that looks like one) and the address is in one of the domains the
   provider is listed for (`identityprovider add --domain`): a provider speaks for its own domains
   only (the nOAuth class of takeovers) — and the address is a *verified* EmailAddress here: an
   address nobody proved (one typed at sign-up, an account's bare `User.email`) names nobody.

tests/test_one_rule_for_who_a_person_is.py fails if other code finds an account from an
upstream `sub` or from an address (docs/accounts.md, "The domain rule").

The same module holds the one write that follows from the rule at sign-in: the person the provider
vouches for gets the address, and an account that only claimed it loses it (audited).
"""

from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.db import transaction

from accounts.audit import account_audit_record
from accounts.models import AccountAuditAction, IdentityProvider


def email_domain(email: str) -> str:
    """The lower-case domain of `email`, or "" for something that is not an address."""
    return email.rpartition("@")[2].strip().lower() if "@" in email else ""


def upstream_email_vouched(*, provider: IdentityProvider, email, email_verified) -> bool:
    """Whether `provider` vouches for `email`: it says `email_verified: true` of an address in one of
    its domains. Nothing else it says about an address counts (OpenID Connect Core §5.1:
    `email_verified` is a boolean)."""
    return (
        email_verified is True
        and isinstance(email, str)
        and email_domain(email) != ""
        and email_domain(email) in (provider.domains or [])
    )


def upstream_person(*, provider: IdentityProvider, sub: str, email=None, email_verified=None):
    """The local account `provider`'s identity `sub` names: the one linked to (provider, sub), else
    the one holding `email` as a verified address when the provider vouches for it
    (upstream_email_vouched); None when there is none."""
    link = SocialAccount.objects.filter(provider=provider.slug, uid=sub).select_related("user").first()
    if link is not None:
        return link.user
    if not upstream_email_vouched(provider=provider, email=email, email_verified=email_verified):
        return None
    # allauth keeps addresses in lower case, and at most one verified row per address
    # (ACCOUNT_UNIQUE_EMAIL: its `unique_verified_email` constraint).
    address = EmailAddress.objects.filter(email__iexact=email, verified=True).select_related("user").first()
    return address.user if address is not None else None


def address_holder(*, email: str):
    """The account here that holds `email`, if any: the one that proved it, else one that claimed it
    (an unverified EmailAddress, or its bare `User.email`). Only to name whom a refusal concerns, or
    to see that an address is taken: never to sign anyone in (that is upstream_person)."""
    address = (
        EmailAddress.objects.filter(email__iexact=email).order_by("-verified", "pk").select_related("user").first()
    )
    if address is not None:
        return address.user
    return get_user_model().objects.filter(email__iexact=email).order_by("pk").first()


@transaction.atomic
def unproven_address_release(*, provider: IdentityProvider, email: str) -> int:
    """`provider` vouches for `email` and no account here proved it: every account that merely
    claimed it (an unverified EmailAddress, or its bare `User.email`) loses it, audited, so that the
    person the provider vouches for is not locked out by whoever typed the address first
    (ACCOUNT_UNIQUE_EMAIL). Returns how many accounts lost it. Refuses (ValueError) an address
    someone proved, or one the provider does not vouch for: those are never taken away here."""
    if not upstream_email_vouched(provider=provider, email=email, email_verified=True):
        raise ValueError("The provider does not vouch for this address.")
    if EmailAddress.objects.filter(email__iexact=email, verified=True).exists():
        raise ValueError("An account here proved this address.")
    User = get_user_model()
    claimed = set(EmailAddress.objects.filter(email__iexact=email).values_list("user_id", flat=True))
    claimed |= set(User.objects.filter(email__iexact=email).values_list("pk", flat=True))
    holders = User.objects.select_for_update().filter(pk__in=claimed).order_by("pk")
    released = 0
    for holder in holders:
        EmailAddress.objects.filter(user=holder, email__iexact=email, verified=False).delete()
        if (holder.email or "").lower() == email.lower():
            # allauth keeps User.email equal to the primary address: another address of theirs
            # becomes primary, the proved one first; none left, no email.
            remaining = EmailAddress.objects.filter(user=holder).order_by("-verified", "pk").first()
            holder.email = remaining.email if remaining is not None else ""
            holder.save(update_fields=["email"])
            if remaining is not None and not remaining.primary:
                EmailAddress.objects.filter(user=holder, primary=True).update(primary=False)
                EmailAddress.objects.filter(pk=remaining.pk).update(primary=True)
        account_audit_record(
            actor=None,
            user=holder,
            action=AccountAuditAction.UNPROVEN_ADDRESS_RELEASED,
            provider=provider.slug,
            domain=email_domain(email),
        )
        released += 1
    return released
