"""django-oauth-toolkit's token models, swapped for ours (settings.OAUTH2_PROVIDER_*_MODEL): codes,
access and refresh tokens, ID tokens. Their rules are the token lifecycle's (`tokens`); their tables
and migrations stay in this app, since DOT's applied migrations name it (docs/architecture.md,
"Why DOT's models stay")."""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from oauth2_provider.models import AbstractAccessToken, AbstractGrant, AbstractIDToken, AbstractRefreshToken

from oauthclients.models.clients import OAuthClient


class Grant(AbstractGrant):
    """An authorization code. `code` holds the SHA-256 digest of the code, never the code."""

    # Set when the code is redeemed; the row is kept until it expires so a replay is recognised
    # and can revoke the token family it produced (RFC 6749 §4.1.2, RFC 9700 §4.14).
    used_at = models.DateTimeField(null=True, blank=True, verbose_name=_("used at"))
    token_family = models.UUIDField(null=True, blank=True, editable=False, verbose_name=_("token family"))
    # OpenID Connect: when the user last logged in (the session's, at the authorization request),
    # for the ID token's `auth_time`; and the session's `sid` (a random value the session keeps,
    # unrelated to its key). DOT's AbstractGrant already holds the request's `nonce`.
    auth_time = models.DateTimeField(null=True, blank=True, editable=False, verbose_name=_("authentication time"))
    sid = models.CharField(max_length=64, blank=True, default="", editable=False)
    # RFC 8176 authentication method references of that login, space-separated (the ID token's
    # `amr`, and from it `acr`; accounts.selectors.session_amr).
    amr = models.CharField(max_length=64, blank=True, default="", editable=False)

    class Meta(AbstractGrant.Meta):
        verbose_name_plural = _("authorization codes")
        verbose_name = _("authorization code")


class AccessTokenQuerySet(models.QuerySet):
    """Every access token descending from one durable ancestor: the one rule that ends a token with
    its ancestors (SECURITY.md, "One service acting for a user at another"), whatever the grant.

    Each token row records its lineage when it is written (tokens.services.access_token_issue, the
    one writer), and a token exchanged from another (RFC 8693) carries its subject's marks, so
    each ancestor finds its descendants with one indexed filter, chains included: no recursion."""

    def descending_from_grant(self, *, client: "OAuthClient | None" = None, user=None):
        """The user's grant of a client (oauthclients.grants.grants_end: Connected apps, rejection,
        deactivation): an exchanged token keeps the app's client and the user, an ID-JAG's too."""
        of = {}
        if client is not None:
            of["application"] = client
        if user is not None:
            of["user"] = user
        if not of:
            raise ValueError("A grant is a client's, a user's, or a user's with a client: name one.")
        return self.filter(**of)

    def descending_from_family(self, token_family):
        """A refresh token family (RefreshToken.revoke_family: a replay, a revocation): its access
        tokens and every token exchanged from one of them (`token_family` carried on)."""
        return self.filter(token_family=token_family) if token_family else self.none()

    def descending_from_assertions(self, *, issuer: str, client: "OAuthClient"):
        """What an identity provider's assertions granted a client (`identityprovider deny-assertions`):
        the ID-JAG tokens and every token exchanged from one (`assertion_issuer` carried on)."""
        return self.filter(application=client, assertion_issuer=issuer) if issuer else self.none()

    def exchanged_from_token(self, token_pk: int):
        """The tokens exchanged from the access token `token_pk` (RFC 8693), and from those, to the
        end of the chain (`exchanged_from`): what its revocation at /revoke ends with it. One indexed
        query per link of the chain (a chain is as long as the services that exchanged in turn)."""
        found, frontier = [], [token_pk]
        while frontier:
            frontier = list(self.model.objects.filter(exchanged_from_id__in=frontier).values_list("pk", flat=True))
            found += frontier
        return self.filter(pk__in=found)


class AccessToken(AbstractAccessToken):
    # JWT access tokens only (RFC 9068, signing.statuslist): the token's bit in a status list.
    # The row is found by the digest of the whole JWT (`token_checksum`), which includes its jti.
    status_list = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # Its bit is set by the database when the row goes, its user is made inactive or its client is
    # rejected, whatever the path (signing.statuslist's triggers).
    status_index = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # RFC 8693 token exchange (oauthflows.token.exchange): `act` names the resource server that exchanged
    # (§4.1, nested for a chain).
    act = models.JSONField(null=True, blank=True, editable=False, verbose_name=_("actor chain (act)"))
    # Lineage (AccessTokenQuerySet above; written by tokens.services.access_token_issue only):
    # - `token_family`: the refresh token family of the user's grant the token belongs to (a code's
    #   and each refresh's token; carried on to a token exchanged from one), so that ending the
    #   family ends it (RefreshToken.revoke_family below);
    # - `assertion_issuer`: the issuer of the organization's identity provider whose assertion
    #   (ID-JAG, RFC 7523, oauthflows.token.idjag) granted this token with no consent page, or the token
    #   it was exchanged from; empty otherwise. Connected apps lists such access as "allowed by your
    #   organization"; `identityprovider deny-assertions` ends it;
    # - `exchanged_from`: the token it was exchanged from. Revoking that token at /revoke ends this
    #   one (`exchanged_from_token`); nothing else ends with it, and no database constraint: a
    #   routine refresh deletes the subject's row while the exchanged token lives on with the
    #   family, so the reference may name a row that has ended (ids are never reused; read
    #   `exchanged_from_id`).
    token_family = models.UUIDField(
        null=True, blank=True, editable=False, db_index=True, verbose_name=_("token family")
    )
    assertion_issuer = models.CharField(
        max_length=300, blank=True, default="", editable=False, verbose_name=_("assertion issuer")
    )
    exchanged_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        editable=False,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,  # searched by /revoke only: the partial index below holds exchanged rows alone
        related_name="+",
        verbose_name=_("exchanged from"),
    )

    objects = AccessTokenQuerySet.as_manager()

    class Meta(AbstractAccessToken.Meta):
        verbose_name = _("access token")
        verbose_name_plural = _("access tokens")
        indexes = [
            # The deny's delete (descending_from_assertions): only assertion-granted rows are in it,
            # so every other token's insert skips it.
            models.Index(
                fields=["application", "assertion_issuer"],
                condition=~Q(assertion_issuer=""),
                name="accesstoken_by_assertion",
            ),
            # What /revoke ends with a token (exchanged_from_token): only exchanged rows are in it.
            models.Index(
                fields=["exchanged_from"],
                condition=Q(exchanged_from__isnull=False),
                name="accesstoken_by_exchanged_from",
            ),
        ]


class RefreshToken(AbstractRefreshToken):
    # When the user authenticated for the grant this token continues: a JWT access token's
    # `auth_time` after a refresh (RFC 9068 §2.2.1).
    auth_time = models.DateTimeField(null=True, blank=True, editable=False, verbose_name=_("authentication time"))

    class Meta(AbstractRefreshToken.Meta):
        verbose_name = _("refresh token")
        verbose_name_plural = _("refresh tokens")

    @classmethod
    def revoke_family(cls, token_family) -> None:
        """DOT's family revocation, and the access tokens exchanged from the family (RFC 8693,
        oauthflows.token.exchange): a replay or a revocation ends what other services obtained with it."""
        super().revoke_family(token_family)
        AccessToken.objects.descending_from_family(token_family).delete()  # status bits set too


class IDToken(AbstractIDToken):
    """An ID token issued (OpenID Connect): its `jti`, user, client, scope and expiry only; the
    signed token itself is never stored. RP-initiated logout finds it by `jti` from id_token_hint."""

    class Meta(AbstractIDToken.Meta):
        verbose_name = _("ID token")
        verbose_name_plural = _("ID tokens")
