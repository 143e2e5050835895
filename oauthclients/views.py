"""Developer settings pages (HTML). Every lookup goes through an owner-scoped selector."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from oauthclients.selectors import client_list_for_owner


@login_required
def client_list(request):
    return render(request, "developer/client_list.html", {"clients": client_list_for_owner(owner=request.user)})
