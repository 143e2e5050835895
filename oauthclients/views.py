"""Developer settings pages (HTML).

Every lookup goes through an owner-scoped selector, so another developer's client is a 404.
Every state change is a POST to its own URL and goes through one service, then redirects (303).
A new secret's plaintext reaches the page after the redirect once, through `onetime`, and is
rendered there with no-store; a reload shows it no more and creates nothing.
"""

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.translation import get_language_info, gettext, gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from oauthclients import services
from oauthclients.exceptions import ApplicationError, SecretNotFound
from oauthclients.forms import ClientCreateForm, ClientUpdateForm
from oauthclients.guide import guide_language, integration_guide_render
from oauthclients.models import ClientStatus, OAuthClient
from oauthclients.onetime import secret_handoff_clear, secret_handoff_read, secret_handoff_set
from oauthclients.selectors import (
    client_current_logo_get_for_owner,
    client_get_for_owner,
    client_list_for_owner,
    client_logo_get,
    client_name_taken_for_owner,
    client_secret_list,
    oauth_endpoints,
)
from scopes.catalog import group_by_level

DUPLICATE_NAME = gettext_lazy(
    "You already have a client with this name. Give each client its own name, so that you can tell them apart."
)


@dataclass(frozen=True)
class NewSecret:
    """The plaintext of a secret being shown once (repr hides it, like services.IssuedSecret)."""

    plaintext: str

    def __repr__(self):
        return "NewSecret(...)"


def _see_other(client: OAuthClient) -> HttpResponseRedirect:
    """303 to the client page: the browser follows with a GET, so a reload cannot re-POST."""
    response = HttpResponseRedirect(reverse("developer:client_detail", args=[client.client_id]))
    response.status_code = 303
    return response


def _see_other_with_secret(request, client: OAuthClient, issued: services.IssuedSecret) -> HttpResponseRedirect:
    response = _see_other(client)
    secret_handoff_set(response, request=request, client_id=client.client_id, plaintext=issued.plaintext)
    add_never_cache_headers(response)
    return response


def _client_page(
    request,
    client: OAuthClient,
    *,
    new_secret: NewSecret | None = None,
    error: ApplicationError | None = None,
) -> HttpResponse:
    secrets = list(client_secret_list(client=client)) if client.is_confidential else None
    active = sum(1 for secret in secrets if secret.is_active) if secrets is not None else 0
    context = {
        "client": client,
        "endpoints": oauth_endpoints(),
        "scope_groups": group_by_level(client.scope_list),
        "secrets": secrets,
        "active_secret_count": active,
        "max_active_secrets": services.MAX_ACTIVE_SECRETS,
        "at_secret_limit": active >= services.MAX_ACTIVE_SECRETS,
        "new_secret": new_secret,
        "error": error,
    }
    # A refused action is a conflict with the client's state; an unknown secret is not found.
    status = 200 if error is None else 404 if isinstance(error, SecretNotFound) else 409
    response = render(request, "developer/client_detail.html", context, status=status)
    if new_secret is not None:
        # The plaintext must not outlive this response in any cache (STYLE.md 8).
        add_never_cache_headers(response)
    return response


def _update_message(*, before: OAuthClient, after: OAuthClient) -> str:
    parts = [gettext("Saved.")]
    if before.is_legacy and not after.is_legacy:
        parts.append(
            gettext("The client is no longer legacy: scopes are enforced for every new authorization request.")
        )
    if after.status == ClientStatus.PENDING and before.status == ClientStatus.APPROVED:
        parts.append(
            gettext(
                "Your change needs a new review, so the client is pending again: until an administrator "
                "approves it, only you can use it, for testing."
            )
        )
    elif after.status == ClientStatus.PENDING and before.status == ClientStatus.REJECTED:
        parts.append(gettext("The client is resubmitted for review."))
    elif after.status == ClientStatus.APPROVED:
        parts.append(gettext("The client stays approved; it did not need a new review."))
    else:
        parts.append(gettext("The client is still pending review."))
    return " ".join(parts)


@require_safe
@login_required
def client_list(request):
    return render(request, "developer/client_list.html", {"clients": client_list_for_owner(owner=request.user)})


@require_http_methods(["GET", "POST"])
@login_required
def client_create(request):
    if request.method != "POST":
        return render(request, "developer/client_create.html", {"form": ClientCreateForm()})
    form = ClientCreateForm(request.POST, request.FILES)
    if form.is_valid() and client_name_taken_for_owner(owner=request.user, name=form.cleaned_data["name"]):
        form.add_error("name", DUPLICATE_NAME)
    if form.is_valid():
        try:
            created = services.client_create(
                owner=request.user, actor=request.user, kind=form.cleaned_data["kind"], **form.service_arguments()
            )
        except (ValidationError, ApplicationError) as exc:
            form.add_service_errors(exc)
        else:
            messages.success(
                request, gettext("%(name)s is registered and pending review.") % {"name": created.client.name}
            )
            if created.secret is None:
                return _see_other(created.client)
            return _see_other_with_secret(request, created.client, created.secret)
    return render(request, "developer/client_create.html", {"form": form})


@require_safe
@login_required
def client_detail(request, client_id: str):
    client = client_get_for_owner(owner=request.user, client_id=client_id)
    plaintext = secret_handoff_read(request, client_id=client.client_id)
    response = _client_page(request, client, new_secret=NewSecret(plaintext) if plaintext else None)
    secret_handoff_clear(request, response, client_id=client.client_id)
    return response


@require_http_methods(["GET", "POST"])
@login_required
def client_update(request, client_id: str):
    client = client_get_for_owner(owner=request.user, client_id=client_id)
    if request.method != "POST":
        form = ClientUpdateForm(initial=ClientUpdateForm.initial_for(client))
        return render(request, "developer/client_update.html", {"form": form, "client": client})
    form = ClientUpdateForm(request.POST, request.FILES)
    if form.is_valid() and client_name_taken_for_owner(
        owner=request.user, name=form.cleaned_data["name"], exclude_client_id=client.client_id
    ):
        form.add_error("name", DUPLICATE_NAME)
    if form.is_valid():
        try:
            updated = services.client_update(client=client, actor=request.user, **form.service_arguments())
        except (ValidationError, ApplicationError) as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, _update_message(before=client, after=updated))
            return _see_other(updated)
    return render(request, "developer/client_update.html", {"form": form, "client": client})


@require_POST
@login_required
def client_secret_create(request, client_id: str):
    client = client_get_for_owner(owner=request.user, client_id=client_id)
    try:
        issued = services.client_secret_create(client=client, actor=request.user)
    except ApplicationError as exc:
        return _client_page(request, client, error=exc)
    messages.success(request, gettext("New secret created. Both active secrets work until you revoke one."))
    return _see_other_with_secret(request, client, issued)


@require_POST
@login_required
def client_secret_revoke(request, client_id: str, secret_id: int):
    client = client_get_for_owner(owner=request.user, client_id=client_id)
    try:
        secret = services.client_secret_revoke(client=client, secret_id=secret_id, actor=request.user)
    except ApplicationError as exc:
        return _client_page(request, client, error=exc)
    messages.success(
        request,
        gettext("Secret %(hint)s… is revoked. Existing access and refresh tokens stay valid.") % {"hint": secret.hint},
    )
    return _see_other(client)


@require_http_methods(["GET", "POST"])
@login_required
def client_delete(request, client_id: str):
    """GET: what deleting means, and a button. POST: delete, revoke every token, audit."""
    client = client_get_for_owner(owner=request.user, client_id=client_id)
    if request.method != "POST":
        return render(request, "developer/client_delete.html", {"client": client})
    try:
        services.client_delete(client=client, actor=request.user)
    except ApplicationError as exc:
        return _client_page(request, client, error=exc)
    messages.success(
        request, gettext("%(name)s is deleted. Every token it held has stopped working.") % {"name": client.name}
    )
    return HttpResponseRedirect(reverse("developer:client_list"), status=303)


@require_safe
@login_required
def integration_guide(request):
    """docs/integrating.md, rendered: the guide a developer needs next to their client's settings."""
    # With ?client=<client_id> (or else the developer's newest client), the guide carries that
    # client's own values; another developer's client_id is a 404 like everywhere on these pages.
    chosen = request.GET.get("client")
    client = (
        client_get_for_owner(owner=request.user, client_id=chosen)
        if chosen
        else client_list_for_owner(owner=request.user).first()
    )
    return render(
        request,
        "developer/integration_guide.html",
        {
            "guide": integration_guide_render(client=client),
            "client": client,
            # The guide's own language (English where docs/ has no translation), for lang and dir.
            "guide_language": guide_language(),
            "guide_language_bidi": get_language_info(guide_language())["bidi"],
        },
    )


def _png(png: bytes, *, cache_control: str) -> HttpResponse:
    response = HttpResponse(png, content_type="image/png")
    response["Cache-Control"] = cache_control
    response["Content-Disposition"] = 'inline; filename="logo.png"'
    return response


@require_safe
def client_logo(request, client_id: str):
    """The approved logo of a client users can authorize, as we re-encoded it; 404 for every other client.

    Public (consent, Connected apps, the login page show it), from this origin only. The URL carries
    the approved version (OAuthClient.shown), so a new approval is a new URL; the cache stays short
    so that a client rejected or deleted stops showing its logo within the hour.
    """
    png = client_logo_get(client_id=client_id)
    if png is None:
        raise Http404("No logo.")
    return _png(png, cache_control="public, max-age=3600")


@require_safe
@login_required
def client_current_logo(request, client_id: str):
    """The logo as uploaded, perhaps awaiting review: for its owner's pages only."""
    png = client_current_logo_get_for_owner(owner=request.user, client_id=client_id)
    if png is None:
        raise Http404("No logo.")
    return _png(png, cache_control="private, no-cache")
