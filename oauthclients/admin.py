"""Admin for the service's administrators: review clients, manage their secrets, read the audit log.

Every state change goes through `oauthclients.services`; the admin only loops over the selection
and reports. Client fields are never edited here: the owner edits (and resubmits) a client in the
developer settings, and scopes of a legacy client are set with `manage.py oauthclient set-scopes`.
"""

from functools import partial

# DOT's admin module registers its own classes for our swapped models when it is imported.
# Import it first so that it has run, whatever the order of INSTALLED_APPS, before we replace them.
import oauth2_provider.admin  # noqa: F401
from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.widgets import ForeignKeyRawIdWidget
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.text import format_lazy
from django.utils.translation import gettext, gettext_lazy, ngettext

from oauthclients import selectors, services
from oauthclients.emails import review_email_failures
from oauthclients.exceptions import ApplicationError
from oauthclients.models import (
    AccessToken,
    ClientAuditEvent,
    ClientKind,
    ClientStatus,
    Grant,
    IDToken,
    OAuthClient,
    RefreshToken,
    TokenFormat,
)
from oauthclients.tier import unverified_ceiling
from oauthclients.validators import MAX_REDIRECT_URIS, MAX_URI_LENGTH, lookalike_flags
from scopes.catalog import LEVEL_LABELS, SCOPES, ScopeLevel, group_by_resource

for _model in (OAuthClient, AccessToken, RefreshToken, Grant, IDToken):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)


def _when(moment) -> str:
    """One date format in the admin: the administrator's time zone (the active one), named."""
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M %Z")


def _posted_digest(request, client) -> str:
    """The review digest the confirmation page carried for this client; "" (never a match) if none."""
    return request.POST.get(f"digest_{client.pk}", "")


def _error_text(exc: ValidationError | ApplicationError) -> str:
    return exc.message if isinstance(exc, ApplicationError) else " ".join(exc.messages)


class ClientAddForm(forms.Form):
    """What an administrator fills in to register a client; `services.client_create` validates it."""

    # Field names match the keys of the service's ValidationError so its errors land on the field.
    owner = forms.ModelChoiceField(queryset=get_user_model().objects.filter(is_active=True))
    name = forms.CharField()
    client_type = forms.ChoiceField(
        label=gettext_lazy("Kind"),
        choices=ClientKind.choices,
        initial=ClientKind.CONFIDENTIAL,
        widget=forms.RadioSelect,
    )
    redirect_uris = forms.CharField(
        label=gettext_lazy("Redirect URIs"),
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        help_text=format_lazy(
            gettext_lazy("One per line, up to {count}. None for a resource server."), count=MAX_REDIRECT_URIS
        ),
    )
    post_logout_redirect_uris = forms.CharField(
        label=gettext_lazy("Post-logout redirect URIs"),
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        help_text=format_lazy(
            gettext_lazy(
                "Optional, one per line, up to {count}: where OpenID Connect logout may send users besides the "
                "redirect URIs."
            ),
            count=MAX_REDIRECT_URIS,
        ),
    )
    scopes = forms.MultipleChoiceField(
        choices=[
            (LEVEL_LABELS[level], [(s.name, s.name) for s in SCOPES.values() if s.level is level])
            for level in ScopeLevel
        ],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text=gettext_lazy("At least one, unless the client is legacy."),
    )
    website_url = forms.CharField(
        label=gettext_lazy("Website URL"), required=False, help_text=gettext_lazy("Not needed for a resource server.")
    )
    # Required for applications by services.client_create (its error lands here); a resource server has none.
    purpose = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    is_legacy = forms.BooleanField(
        label=gettext_lazy("Legacy"),
        required=False,
        help_text=gettext_lazy("Only to register a client that predates scopes: no scopes, tokens unrestricted."),
    )
    approve = forms.BooleanField(label=gettext_lazy("Approve at once"), required=False)
    resource_uri = forms.CharField(
        label=gettext_lazy("Resource URI"),
        required=False,
        max_length=MAX_URI_LENGTH,
        help_text=gettext_lazy(
            "Resource servers only: the service's OAUTH_RESOURCE_URI, which apps name in `resource` (RFC 8707) "
            "to get tokens bound to it."
        ),
    )
    token_format = forms.ChoiceField(
        label=gettext_lazy("Token format"),
        choices=TokenFormat.choices,
        initial=TokenFormat.OPAQUE,
        required=False,
        help_text=gettext_lazy(
            "Resource servers with a resource URI only: JWT access tokens it verifies itself (scopes.jwt, "
            "docs/verifying-tokens.md), or opaque tokens it introspects."
        ),
    )

    def __init__(self, *args, admin_site, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["owner"].widget = ForeignKeyRawIdWidget(
            OAuthClient._meta.get_field("user").remote_field, admin_site
        )

    def add_service_error(self, exc: ValidationError) -> None:
        if not hasattr(exc, "error_dict"):
            self.add_error(None, exc)
            return
        for field, errors in exc.error_dict.items():
            self.add_error(field if field in self.fields else None, errors)


class RejectForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "cols": 60}),
        help_text=gettext_lazy("Shown to the owner, who can edit the client and send it back to review."),
        error_messages={"required": gettext_lazy("Give the owner a reason for the rejection.")},
    )


class RevokeSecretForm(forms.Form):
    secret = forms.MultipleChoiceField(error_messages={"required": gettext_lazy("Choose the secret to revoke.")})

    def __init__(self, *args, secret_ids, **kwargs):
        super().__init__(*args, **kwargs)
        # Only the active secrets of the selected clients can be chosen; the page renders the table.
        self.fields["secret"].choices = [(str(pk), str(pk)) for pk in secret_ids]


class StatusFilter(admin.SimpleListFilter):
    """Status, defaulting to the review queue: an administrator lands on what waits for them."""

    title = gettext_lazy("status")
    # The same parameter as a plain field filter, so that existing links keep working.
    parameter_name = "status__exact"
    ALL = "all"

    def __init__(self, request, params, model, model_admin):
        self.default = self.default_for(request)
        super().__init__(request, params, model, model_admin)

    @classmethod
    def default_for(cls, request) -> str:
        # Resource servers are approved when made and never wait for review: their own filter
        # (kind) shows them all rather than an empty queue.
        return cls.ALL if request.GET.get("client_type__exact") == ClientKind.RESOURCE_SERVER else ClientStatus.PENDING

    @classmethod
    def shown(cls, request) -> str:
        """The status this changelist request shows (the queue unless another was chosen)."""
        return request.GET.get(cls.parameter_name) or cls.default_for(request)

    def lookups(self, request, model_admin):
        return [*ClientStatus.choices, (self.ALL, gettext("All"))]

    def value(self):
        return super().value() or self.default

    def choices(self, changelist):
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request, queryset):
        value = self.value()
        return queryset if value == self.ALL else queryset.filter(status=value)


def _risk_tags(scope) -> str:
    tags = []
    if scope.name.endswith("_WRITE"):
        tags.append(format_html('<span class="risk write">{}</span>', gettext("can change")))
    if scope.level is ScopeLevel.ORGANIZATION:
        tags.append(format_html('<span class="risk org">{}</span>', gettext("organization-wide")))
    return format_html_join(" ", "{}", ((tag,) for tag in tags))


@admin.register(OAuthClient)
class OAuthClientAdmin(admin.ModelAdmin):
    # Fits 1280 px: short kind labels, owner and dates compact; the rest is on the change page.
    list_display = (
        "name",
        "client_id_short",
        "owner_display",
        "status_display",
        "kind_display",
        "is_legacy",
        "created_date",
    )
    list_filter = (StatusFilter, "client_type", "is_legacy")
    search_fields = ("name", "client_id", "user__username", "user__email")
    list_select_related = ("user",)
    date_hierarchy = "created"
    change_form_template = "admin/oauthclients/oauthclient/change_form.html"
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "client_id",
                    "owner_link",
                    "client_type",
                    "legacy_display",
                    "logo_display",
                    "website_url",
                    "privacy_policy_url",
                    "terms_url",
                    "purpose",
                )
            },
        ),
        (
            gettext_lazy("Review"),
            {
                "fields": (
                    "status",
                    "self_registration",
                    "changes_since_approval",
                    "rejection_reason",
                    "reviewed_by",
                    "reviewed_at",
                )
            },
        ),
        (
            gettext_lazy("Access"),
            {
                "fields": (
                    "scope_names",
                    "redirect_uri_lines",
                    "post_logout_redirect_uri_lines",
                    "resource_uri",
                    "token_format",
                )
            },
        ),
        (gettext_lazy("Secrets"), {"fields": ("secrets_display",)}),
        (gettext_lazy("History"), {"fields": ("created", "updated", "audit_trail", "audit_events_link")}),
    )
    # All of it: review state moves only through Approve/Reject, the rest through the owner's edit.
    readonly_fields = tuple(field for _title, options in fieldsets for field in options["fields"])
    # DOT's get_absolute_url names its own developer pages, which this project does not mount.
    view_on_site = False
    actions = (
        "approve_clients",
        "reject_clients",
        "create_secret",
        "revoke_secret",
        "issue_jwt_access_tokens",
        "issue_opaque_access_tokens",
        "issue_registration_tokens",
    )

    def has_change_permission(self, request, obj=None):
        # The change page of a client is view-only (see the module docstring); the changelist
        # (obj is None) still needs change permission for the actions.
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request, obj=None):
        # Deleting would take the audit trail with it; rejecting stops the client and its tokens.
        return False

    def get_queryset(self, request):
        # Each unverified row's look-alike, in the changelist's one query rather than one per row.
        return selectors.clients_with_verified_name_like(super().get_queryset(request))

    def get_ordering(self, request):
        # The review queue is first come, first served; every other view shows the newest first.
        queue = StatusFilter.shown(request) in (ClientStatus.PENDING, ClientStatus.UNVERIFIED)
        return ["created", "id"] if queue else ["-created", "-id"]

    @admin.display(description=gettext_lazy("created"), ordering="created")
    def created_date(self, client):
        return format_html(
            '<time datetime="{}">{}</time>', client.created.isoformat(), client.created.date().isoformat()
        )

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_display(self, client):
        # A self-registered app named like a verified one is flagged here and on its consent page.
        lookalike = client.verified_name_like
        if lookalike:
            return format_html(
                '{} <span class="risk write" title="{}">{}</span>',
                client.get_status_display().split(" (")[0],
                gettext("Named like the verified app %(name)s") % {"name": lookalike},
                gettext("named like “%(name)s”") % {"name": lookalike},
            )
        return client.get_status_display().split(" (")[0]

    @admin.display(description=gettext_lazy("self-registration"))
    def self_registration(self, client):
        if not client.is_self_registered:
            return gettext("No: registered by its owner.")
        source = (
            gettext("a client ID metadata document")
            if client.registration_source == "cimd"
            else gettext("dynamic registration")
        )
        parts = [
            gettext(
                "Yes, through %(source)s (RFC 7591 / docs/agents.md). While unverified, users can grant it only "
                "%(scopes)s; approving it makes its registered scopes usable, rejecting it ends every token."
            )
            % {"source": source, "scopes": ", ".join(sorted(unverified_ceiling()))}
        ]
        lookalike = selectors.verified_name_like(client)
        if lookalike:
            parts.append(
                gettext("Its name is like the verified app “%(name)s”: it is not that app.") % {"name": lookalike}
            )
        return format_html_join(mark_safe(""), "<p>{}</p>", ((part,) for part in parts))

    @admin.display(description=gettext_lazy("client ID"), ordering="client_id")
    def client_id_short(self, client):
        # The 40 characters would push the list past 1280 px; search finds a client by its full ID.
        return format_html('<code title="{}">{}…</code>', client.client_id, client.client_id[:10])

    @admin.display(description=gettext_lazy("legacy"))
    def legacy_display(self, client):
        # A sentence about this client, not the field's generic help text under a ✗.
        if client.is_legacy:
            return gettext("Yes: registered before scopes existed, so its tokens are not restricted by scope.")
        return gettext("No: its tokens carry the scopes users granted.")

    @admin.display(description=gettext_lazy("owner"), ordering="user__username")
    def owner_display(self, client):
        return client.user.get_username()

    @admin.display(description=gettext_lazy("kind"), ordering="client_type")
    def kind_display(self, client):
        return client.get_client_type_display().split(" (")[0]

    @admin.display(description=gettext_lazy("owner"))
    def owner_link(self, client):
        url = reverse("admin:auth_user_change", args=[client.user_id])
        return format_html(
            '<a href="{}">{}</a> ({})', url, client.user.get_username(), client.user.email or gettext("no email")
        )

    @admin.display(description=gettext_lazy("logo"))
    def logo_display(self, client):
        if not client.has_logo:
            return gettext("None")
        url = reverse("admin:oauthclients_oauthclient_logo", args=[client.pk]) + f"?v={client.review_digest()[:12]}"
        return format_html(
            '<img src="{}" alt="{}" width="64" height="64">', url, gettext("Logo of %(name)s") % {"name": client.name}
        )

    @admin.display(description=gettext_lazy("scopes"))
    def scope_names(self, client):
        if client.is_legacy:
            return gettext("None: legacy client, tokens are not restricted by scope.")
        rows = [
            format_html(
                "<li><strong>{}</strong> · {} ({}) <code>{}</code> {}</li>",
                resource.label,
                scope.description,
                LEVEL_LABELS[scope.level].lower(),
                scope.name,
                _risk_tags(scope),
            )
            for resource in group_by_resource(client.scope_list)
            for scope in resource.scopes
        ]
        return format_html('<ul class="scope-review">{}</ul>', format_html_join("", "{}", ((row,) for row in rows)))

    @admin.display(description=gettext_lazy("changes since the last approval"))
    def changes_since_approval(self, client):
        changes = client.changes_since_approval()
        if changes is None:
            return gettext("Never approved.") if client.status != ClientStatus.APPROVED else "—"
        if not changes:
            return gettext("None.")
        return format_html_join(mark_safe(""), "<p>{}</p>", ((change,) for change in changes))

    @admin.display(description=gettext_lazy("secrets"))
    def secrets_display(self, client):
        """By hint only: digests are never shown. (A table of our own: the tabular inline's empty headers fail axe.)"""
        if not client.is_confidential:
            return gettext("None: a public client uses PKCE.")
        rows = format_html_join(
            "",
            "<tr><td><code>{}…</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    secret.hint,
                    _when(secret.created),
                    _when(secret.last_used_at) if secret.last_used_at else gettext("never"),
                    gettext("active")
                    if secret.is_active
                    else gettext("revoked %(when)s") % {"when": _when(secret.revoked_at)},
                )
                for secret in selectors.client_secret_list(client=client)
            ),
        )
        return format_html(
            '<table class="secrets-review"><thead><tr><th scope="col">{}</th><th scope="col">{}</th>'
            '<th scope="col">{}</th><th scope="col">{}</th></tr></thead><tbody>{}</tbody></table>',
            gettext("Secret"),
            gettext("Created"),
            gettext("Last used"),
            gettext("State"),
            rows,
        )

    @admin.display(description=gettext_lazy("audit trail (latest 20)"))
    def audit_trail(self, client):
        events = client.audit_events.select_related("actor", "user")[:20]
        return format_html_join(
            mark_safe(""),
            '<p><time datetime="{}">{}</time> · {}</p>',
            ((event.created.isoformat(), _when(event.created), event.sentence()) for event in events),
        ) or gettext("No events.")

    @admin.display(description=gettext_lazy("redirect URIs"))
    def redirect_uri_lines(self, client):
        return format_html_join(mark_safe("<br>"), "{}", ((uri,) for uri in client.redirect_uri_list))

    @admin.display(description=gettext_lazy("post-logout redirect URIs"))
    def post_logout_redirect_uri_lines(self, client):
        return format_html_join(mark_safe("<br>"), "{}", ((uri,) for uri in client.post_logout_redirect_uri_list))

    @admin.display(description=gettext_lazy("audit events"))
    def audit_events_link(self, client):
        url = reverse("admin:oauthclients_clientauditevent_changelist")
        return format_html(
            '<a href="{}?client__id__exact={}">{}</a>', url, client.pk, gettext("All events of this client")
        )

    # --- Approve and Reject from the change page: a confirmation page each, then one service call ---

    def get_urls(self):
        wrap = self.admin_site.admin_view
        # Adding a client is our own view (client_add_view), registered under the admin's own name
        # for the add page (the changelist's "Add" button and every reverse() find it), in place of
        # ModelAdmin's model-form add view, which this admin never uses.
        add_name = "oauthclients_oauthclient_add"
        return [
            path("add/", wrap(self.client_add_view), name=add_name),
            path("<path:object_id>/approve/", wrap(self.approve_view), name="oauthclients_oauthclient_approve"),
            path("<path:object_id>/logo.png", wrap(self.logo_view), name="oauthclients_oauthclient_logo"),
            path("<path:object_id>/reject/", wrap(self.reject_view), name="oauthclients_oauthclient_reject"),
            *(pattern for pattern in super().get_urls() if getattr(pattern, "name", None) != add_name),
        ]

    def _review_target(self, request, object_id):
        if not super().has_change_permission(request):
            raise PermissionDenied
        try:
            return get_object_or_404(OAuthClient.objects.select_related("user"), pk=object_id)
        except (ValueError, ValidationError):
            raise Http404("No such client.") from None  # a pk that is not a number: not found, not a 500

    def _review(self, client) -> dict:
        """What the reviewer is shown of one client, and the digest that binds an approval to it."""
        digest = client.review_digest()
        return {
            "client": client,
            "digest": digest,
            "digest_field": f"digest_{client.pk}",
            "scopes": self.scope_names(client),
            "changes": self.changes_since_approval(client),
            "logo_url": reverse("admin:oauthclients_oauthclient_logo", args=[client.pk])
            + f"?v={client.review_digest()[:12]}",
            "flags": lookalike_flags(
                name=client.name,
                urls={
                    "website": client.website_url,
                    "privacy policy": client.privacy_policy_url,
                    "terms of service": client.terms_url,
                    **{f"redirect URI {uri}": uri for uri in client.redirect_uri_list},
                    **{f"post-logout redirect URI {uri}": uri for uri in client.post_logout_redirect_uri_list},
                },
            ),
        }

    def logo_view(self, request, object_id):
        """The client's current logo, for the reviewer only: users are served the approved one."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            row = OAuthClient.objects.filter(pk=object_id).values_list("logo_png", flat=True).first()
        except (ValueError, ValidationError):
            row = None
        if row is None:
            raise Http404("No logo.")
        response = HttpResponse(bytes(row), content_type="image/png")
        response["Cache-Control"] = "private, no-store"
        return response

    def _review_page(self, request, client, *, template, title, **context):
        return TemplateResponse(
            request,
            f"admin/oauthclients/{template}",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": title,
                "client": client,
                "original": client,
                "change_url": reverse("admin:oauthclients_oauthclient_change", args=[client.pk]),
                **context,
            },
        )

    def approve_view(self, request, object_id):
        """GET: show everything approval covers, with its digest. POST: approve that version only."""
        client = self._review_target(request, object_id)
        if request.method == "POST":
            try:
                services.client_approve(
                    client=client, actor=request.user, expected_digest=_posted_digest(request, client)
                )
            except (ApplicationError, ValidationError) as exc:
                self.message_user(request, _error_text(exc), messages.ERROR)
            else:
                self.message_user(
                    request, gettext("Approved %(name)s. Any user can now authorize it.") % {"name": client.name}
                )
            return redirect("admin:oauthclients_oauthclient_change", client.pk)
        return self._review_page(
            request,
            client,
            template="approve_client.html",
            title=gettext("Approve %(name)s?") % {"name": client.name},
            review=self._review(client),
        )

    def reject_view(self, request, object_id):
        """GET: ask for the reason. POST: reject with it."""
        client = self._review_target(request, object_id)
        form = RejectForm(request.POST if request.method == "POST" else None)
        if request.method == "POST" and form.is_valid():
            try:
                services.client_reject(client=client, actor=request.user, reason=form.cleaned_data["reason"])
            except (ApplicationError, ValidationError) as exc:
                self.message_user(request, _error_text(exc), messages.ERROR)
            else:
                self.message_user(
                    request,
                    gettext("Rejected %(name)s. Its tokens stop working; the owner sees why.") % {"name": client.name},
                )
            return redirect("admin:oauthclients_oauthclient_change", client.pk)
        return self._review_page(
            request,
            client,
            template="reject_client.html",
            title=gettext("Reject %(name)s?") % {"name": client.name},
            form=form,
        )

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            can_review = super().has_change_permission(request)
            context.update(
                can_approve=can_review and obj.status in (ClientStatus.PENDING, ClientStatus.UNVERIFIED),
                can_reject=can_review and obj.status != ClientStatus.REJECTED,
            )
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

    # --- adding goes through services.client_create, and shows the first secret once ---

    @staticmethod
    def _create_app(request, data) -> services.ClientCreated:
        return services.client_create(
            owner=data["owner"],
            name=data["name"],
            website_url=data["website_url"],
            kind=data["client_type"],
            redirect_uris=data["redirect_uris"].split(),
            post_logout_redirect_uris=data["post_logout_redirect_uris"].split(),
            scopes=data["scopes"],
            purpose=data["purpose"],
            is_legacy=data["is_legacy"],
            approve=data["approve"],
            actor=request.user,
        )

    def client_add_view(self, request):
        """Register a client or a resource server through the services (ClientAddForm), then the
        one-time page with its first secret. Its own page (admin/oauthclients/client_add.html),
        not Django's change form: nothing here is a model form."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ClientAddForm(request.POST or None, admin_site=self.admin_site)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            if data.get("resource_uri") and data["client_type"] != ClientKind.RESOURCE_SERVER:
                form.add_error("resource_uri", gettext("Only a resource server has a resource URI."))
            if data.get("token_format") == TokenFormat.JWT and data["client_type"] != ClientKind.RESOURCE_SERVER:
                form.add_error("token_format", gettext("Only a resource server has a token format."))
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                created = (
                    services.resource_server_create(
                        owner=data["owner"],
                        name=data["name"],
                        resource_uri=data.get("resource_uri") or "",
                        token_format=data.get("token_format") or TokenFormat.OPAQUE,
                        actor=request.user,
                    )
                    if data["client_type"] == ClientKind.RESOURCE_SERVER
                    else self._create_app(request, data)
                )
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                self.log_addition(request, created.client, [{"added": {}}])
                issued = [(created.client, created.secret)] if created.secret else []
                return self._one_time_secrets_page(
                    request, title=gettext("OAuth client created"), client=created.client, issued=issued
                )
        return TemplateResponse(
            request,
            "admin/oauthclients/client_add.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": gettext("Add OAuth client"),
                "form": form,
                "media": self.media + form.media,
            },
        )

    # --- actions: thin loops over the services ---

    def _action_page(self, request, template: str, *, title: str, queryset, action: str, **context):
        return TemplateResponse(
            request,
            f"admin/oauthclients/{template}",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": title,
                "queryset": queryset,
                "action": action,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                **context,
            },
        )

    def _one_time_secrets_page(self, request, *, title: str, issued, client=None):
        # A rendered page, never `messages`: those are stored in the session or a cookie.
        # (Every admin view is already never_cache.)
        return TemplateResponse(
            request,
            "admin/oauthclients/one_time_secrets.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": title,
                "client": client,
                "issued": issued,
            },
        )

    def _each(self, request, calls, *, done) -> list:
        """Run each (client, service call); report every refusal with its client, then the count done
        (`done(count)`: the sentence, in the administrator's language)."""
        results = []
        with review_email_failures() as mail_failed:
            for client, call in calls:
                try:
                    results.append((client, call()))
                except (ApplicationError, ValidationError) as exc:
                    self.message_user(request, f"{client} ({client.client_id}): {_error_text(exc)}", messages.ERROR)
        if results:
            self.message_user(request, done(len(results)))
        if mail_failed:
            self.message_user(
                request,
                gettext(
                    "Done, but the email to the owner could not be sent for: %(clients)s. See the server log; "
                    "tell the owners another way."
                )
                % {"clients": ", ".join(mail_failed)},
                messages.WARNING,
            )
        return results

    @admin.action(description=gettext_lazy("Approve selected clients"), permissions=["change"])
    def approve_clients(self, request, queryset):
        """A confirmation page showing every selected client in full; each approval is bound to what it showed."""
        clients = list(queryset.select_related("user"))
        if "post" not in request.POST:
            return self._action_page(
                request,
                "approve_clients.html",
                title=gettext("Approve clients"),
                queryset=clients,
                action="approve_clients",
                reviews=[self._review(client) for client in clients],
            )
        calls = [
            (
                client,
                partial(
                    services.client_approve,
                    client=client,
                    actor=request.user,
                    expected_digest=_posted_digest(request, client),
                ),
            )
            for client in clients
        ]
        self._each(
            request,
            calls,
            done=lambda n: ngettext("Approved %(count)s client.", "Approved %(count)s clients.", n) % {"count": n},
        )
        return None

    @admin.action(description=gettext_lazy("Reject selected clients"), permissions=["change"])
    def reject_clients(self, request, queryset):
        form = RejectForm(request.POST if "post" in request.POST else None)
        if not form.is_valid():
            return self._action_page(
                request,
                "reject_clients.html",
                title=gettext("Reject clients"),
                queryset=queryset,
                action="reject_clients",
                form=form,
            )
        reason = form.cleaned_data["reason"]
        calls = [
            (client, partial(services.client_reject, client=client, actor=request.user, reason=reason))
            for client in queryset
        ]
        self._each(
            request,
            calls,
            done=lambda n: ngettext("Rejected %(count)s client.", "Rejected %(count)s clients.", n) % {"count": n},
        )
        return None

    def _token_format_set(self, request, queryset, token_format: str):
        calls = [
            (
                client,
                partial(
                    services.resource_server_token_format_set,
                    client=client,
                    token_format=token_format,
                    actor=request.user,
                ),
            )
            for client in queryset
        ]
        self._each(
            request,
            calls,
            done=lambda n: (
                ngettext("Changed %(count)s resource server.", "Changed %(count)s resource servers.", n) % {"count": n}
            ),
        )

    @admin.action(description=gettext_lazy("Resource servers: issue JWT access tokens"), permissions=["change"])
    def issue_jwt_access_tokens(self, request, queryset):
        self._token_format_set(request, queryset, TokenFormat.JWT)

    @admin.action(description=gettext_lazy("Resource servers: issue opaque access tokens"), permissions=["change"])
    def issue_opaque_access_tokens(self, request, queryset):
        self._token_format_set(request, queryset, TokenFormat.OPAQUE)

    @admin.action(description=gettext_lazy("Create a new secret"), permissions=["change"])
    def create_secret(self, request, queryset):
        calls = [
            (client, partial(services.client_secret_create, client=client, actor=request.user)) for client in queryset
        ]
        issued = self._each(
            request,
            calls,
            done=lambda n: ngettext("Created %(count)s secret.", "Created %(count)s secrets.", n) % {"count": n},
        )
        if not issued:
            return None
        return self._one_time_secrets_page(request, title=gettext("New client secrets"), issued=issued)

    @admin.action(
        description=gettext_lazy("Self-registered clients: issue a registration access token"), permissions=["change"]
    )
    def issue_registration_tokens(self, request, queryset):
        """RFC 7592 for clients that registered themselves before registration access tokens existed
        (or lost theirs): a new one each, shown on the page this POST answers and never again."""
        calls = [
            (client, partial(services.client_registration_token_issue, client=client, actor=request.user))
            for client in queryset
        ]
        issued = self._each(
            request,
            calls,
            done=lambda n: (
                ngettext(
                    "Issued %(count)s registration access token.", "Issued %(count)s registration access tokens.", n
                )
                % {"count": n}
            ),
        )
        if not issued:
            return None
        # A rendered page, never `messages` (stored in the session or a cookie); admin views are never_cache.
        return TemplateResponse(
            request,
            "admin/oauthclients/one_time_registration_tokens.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": gettext("New registration access tokens"),
                "issued": [result for _client, result in issued],
            },
        )

    @admin.action(description=gettext_lazy("Revoke a secret"), permissions=["change"])
    def revoke_secret(self, request, queryset):
        clients = [(client, list(selectors.client_secret_list_active(client=client))) for client in queryset]
        client_of = {secret.pk: client for client, secrets in clients for secret in secrets}
        if not client_of:
            self.message_user(request, gettext("None of the selected clients has an active secret."), messages.WARNING)
            return None
        form = RevokeSecretForm(request.POST if "post" in request.POST else None, secret_ids=list(client_of))
        if not form.is_valid():
            return self._action_page(
                request,
                "revoke_secret.html",
                title=gettext("Revoke a secret"),
                queryset=queryset,
                action="revoke_secret",
                form=form,
                clients=clients,
            )
        calls = [
            (
                client_of[secret_id],
                partial(
                    services.client_secret_revoke, client=client_of[secret_id], secret_id=secret_id, actor=request.user
                ),
            )
            for secret_id in map(int, form.cleaned_data["secret"])
        ]
        self._each(
            request,
            calls,
            done=lambda n: ngettext("Revoked %(count)s secret.", "Revoked %(count)s secrets.", n) % {"count": n},
        )
        return None


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written only by the services or the OAuth flows: listed and viewed, never edited here."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ClientAuditEvent)
class ClientAuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created", "client", "sentence")
    list_filter = ("action", "created")
    search_fields = ("client__client_id", "client__name", "actor__username", "user__username")
    list_select_related = ("client", "actor", "user")
    fields = ("created", "client", "action", "actor", "user", "sentence")
    readonly_fields = ("sentence",)
    date_hierarchy = "created"

    @admin.display(description=gettext_lazy("what happened"))
    def sentence(self, event):
        return event.sentence()


from oauthclients import admin_exchange  # noqa: E402, F401  (registers the exchange targets' page)
