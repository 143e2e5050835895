"""The site's root: a signed-in user lands where they work (the login itself is accounts/, on django-allauth)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_safe

from accounts.selectors import landing_url_for


@require_safe
@login_required
def home(request):
    return redirect(landing_url_for(request.user))
