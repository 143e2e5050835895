"""What the registry accepts of a client, for every service that writes one: its fields cleaned
(names, purpose, links, redirect URIs, scopes, look-alikes), its web origins kept in step, its row
lock and its audit row."""

from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator, URLValidator
from django.utils.translation import gettext, gettext_lazy

from oauthclients.audit import audit_record
from oauthclients.models import (
    APP_KINDS,
    MAX_ORIGIN_LENGTH,
    ClientKind,
    ClientOrigin,
    OAuthClient,
)
from oauthclients.policy import Door, client_may_act
from oauthclients.validators import (
    MAX_LINK_URL_LENGTH,
    has_bidi_control,
    has_line_break_or_control,
    invisible_characters,
    logo_reencode,
    mixed_script_host,
    validate_optional_url,
    validate_redirect_uris,
    validate_scope_names,
    web_origin,
)

MAX_NAME_LENGTH = 100
MAX_PURPOSE_LENGTH = 2000
PURPOSE_REQUIRED = gettext_lazy("Say what the application does with the access it asks for: reviewers read this.")
LOOKALIKE_URL = gettext_lazy(
    "This address mixes alphabets in its host name or holds bidirectional control characters, as "
    "look-alike addresses do (раураl.com for paypal.com). Use the plain address of your site."
)
# The fields' names in the sentences of _clean_text ("Name is required.").
NAME_LABEL = gettext_lazy("Name")
PURPOSE_LABEL = gettext_lazy("Purpose")
REASON_LABEL = gettext_lazy("The reason")


_audit = audit_record


def _lock(client: OAuthClient) -> OAuthClient:
    """Re-read the client under a row lock; the caller's copy may be stale."""
    return OAuthClient.objects.select_for_update().get(pk=client.pk)


def _clean_text(
    value: str,
    *,
    field: str,
    label: str,
    max_length: int,
    required: bool,
    single_line: bool = False,
    visible_only: bool = False,
) -> str:
    value = (value or "").strip()
    if has_bidi_control(value):
        # They reorder what a user reads: "ppA dooG" displayed as "Good App" (SECURITY.md, "Review").
        raise ValidationError(
            {field: gettext("%(field)s cannot contain bidirectional control characters.") % {"field": label}}
        )
    if visible_only and (invisible := invisible_characters(value)):
        # Shown as nothing or a blank, yet counted: "Google\u3164Calendar" reads as a verified app's
        # name while being another string (validators.invisible_characters).
        raise ValidationError(
            {
                field: gettext(
                    "%(field)s cannot contain invisible or blank-looking characters (%(characters)s): "
                    "they make a name read like another one."
                )
                % {"field": label, "characters": ", ".join(invisible)}
            }
        )
    if single_line and has_line_break_or_control(value):
        # The name goes into email headers (the review mail's subject): CR/LF there would be
        # header injection, and Django refuses such a header at send time, after the review.
        raise ValidationError(
            {field: gettext("%(field)s must be a single line, without control characters.") % {"field": label}}
        )
    if required and not value:
        raise ValidationError(
            {field: PURPOSE_REQUIRED if field == "purpose" else gettext("%(field)s is required.") % {"field": label}}
        )
    if len(value) > max_length:
        raise ValidationError(
            {field: gettext("%(field)s can be at most %(max)s characters.") % {"field": label, "max": max_length}}
        )
    if "\x00" in value:
        raise ValidationError({field: gettext("%(field)s cannot contain NUL characters.") % {"field": label}})
    return value


def _clean_website(website_url, cleaned: dict, errors: dict) -> None:
    try:
        website_url = (website_url or "").strip()
        # PostgreSQL cannot store NUL in text; refuse it here rather than fail on save.
        ProhibitNullCharactersValidator()(website_url)
        URLValidator(schemes=["http", "https"])(website_url)
        if len(website_url) > MAX_LINK_URL_LENGTH:
            raise ValidationError(f"The website URL can be at most {MAX_LINK_URL_LENGTH} characters.")
        cleaned["website_url"] = website_url
    except ValidationError:
        errors["website_url"] = [gettext("Enter the application's website as an http(s) URL.")]
    else:
        if has_bidi_control(website_url) or mixed_script_host(website_url):
            errors["website_url"] = [LOOKALIKE_URL]


def _clean_fields(
    *,
    name,
    purpose,
    website_url,
    redirect_uris,
    scopes,
    is_legacy,
    privacy_policy_url="",
    terms_url="",
    logo: bytes | None = None,
    website_required: bool = True,
    purpose_required: bool = True,
    post_logout_redirect_uris=(),
) -> dict:
    """Validate everything a client is made of; report every field's problem at once.

    A client a person registers (the developer page, the admin, the command) says what it is for:
    reviewers and users read its purpose. A self-registered client says no such thing (RFC 7591 has
    no purpose) and may have no website (`client_uri` is optional).
    """
    errors: dict[str, list] = {}
    cleaned: dict = {}
    for field, label, value in (
        ("privacy_policy_url", "privacy policy", privacy_policy_url),
        ("terms_url", "terms of service", terms_url),
    ):
        try:
            cleaned[field] = validate_optional_url(value, label=label)
        except ValidationError as exc:
            errors[field] = exc.messages
    cleaned["logo_png"] = None
    if logo is not None:
        try:
            cleaned["logo_png"] = logo_reencode(logo)
        except ValidationError as exc:
            errors["logo"] = exc.messages
    for field, label, value, max_length, required in (
        ("name", NAME_LABEL, name, MAX_NAME_LENGTH, True),
        ("purpose", PURPOSE_LABEL, purpose, MAX_PURPOSE_LENGTH, purpose_required),
    ):
        try:
            cleaned[field] = _clean_text(
                value,
                field=field,
                label=label,
                max_length=max_length,
                required=required,
                single_line=field == "name",
                visible_only=field == "name",
            )
        except ValidationError as exc:
            errors.update(exc.message_dict)
    if website_required or (website_url or "").strip():
        _clean_website(website_url, cleaned, errors)
    else:
        cleaned["website_url"] = ""
    try:
        cleaned["redirect_uris"] = validate_redirect_uris(list(redirect_uris))
    except ValidationError as exc:
        errors["redirect_uris"] = exc.messages
    cleaned["post_logout_redirect_uris"] = []
    if post_logout_redirect_uris:
        # OpenID Connect RP-Initiated Logout §3.1: the same rules as redirect URIs (they are where
        # users are sent), none required.
        try:
            cleaned["post_logout_redirect_uris"] = validate_redirect_uris(list(post_logout_redirect_uris))
        except ValidationError as exc:
            errors["post_logout_redirect_uris"] = exc.messages
    if is_legacy:
        if scopes:
            errors["scopes"] = [gettext("A legacy client has no scopes; select scopes later to migrate it.")]
        cleaned["scopes"] = []
    else:
        try:
            cleaned["scopes"] = validate_scope_names(list(scopes))
        except ValidationError as exc:
            errors["scopes"] = exc.messages
    if errors:
        raise ValidationError(errors)
    return cleaned


def _validated_new_client(kind: str, clean) -> dict:
    """The cleaned fields of a new app client (`clean()`: _clean_fields with its arguments), with
    a kind that is not an app's reported beside every field's problem, all at once."""
    errors: dict[str, list] = {}
    if kind not in APP_KINDS:
        # Resource servers have their own service (resource_server_create): they get no grants.
        errors["client_type"] = [f"Kind must be one of: {', '.join(APP_KINDS)}."]
    try:
        cleaned = clean()
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if errors:
        raise ValidationError(errors)
    return cleaned


def _client_origins_sync(client: OAuthClient, *, created: bool = False) -> None:
    """The client's ClientOrigin rows, rewritten from what it is now; every service that saves a
    client's redirect URIs, review state or deletion calls it in its transaction (oauthflows.cors).

    Only a public client that users may authorize (approved or unverified, not deleted) has rows:
    a confidential client's pages never hold its secret, and a pending or rejected client's redirect
    URIs are usable by nobody else, so their origins read nothing.
    """
    if not created:
        ClientOrigin.objects.filter(client=client).delete()
    if client.client_type != ClientKind.PUBLIC or not client_may_act(client, None, Door.AUTHORIZE):
        return  # oauthclients.policy: an app anyone may authorize (approved, unverified), not deleted
    origins = {origin for origin in map(web_origin, client.redirect_uri_list) if origin}
    approved = client.is_approved
    ClientOrigin.objects.bulk_create(
        [
            ClientOrigin(client=client, origin=origin, approved=approved)
            for origin in sorted(origins)
            if len(origin) <= MAX_ORIGIN_LENGTH
        ]
    )
