"""Every page names its icon (no 404 in a browser's console for /favicon.ico), served as a static file."""

import re

from django.contrib.staticfiles import finders
from django.test import Client

from tests.factories import PASSWORD

ICON_RE = re.compile(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">')


def test_the_pages_and_the_admin_name_the_icon_and_it_is_a_static_svg(reviewer):
    admin = Client()
    assert admin.login(username=reviewer.username, password=PASSWORD)
    for browser, path in ((Client(), "/accounts/login/"), (admin, "/admin/")):
        page = browser.get(path)
        assert page.status_code == 200
        (href,) = ICON_RE.findall(page.content.decode())
        assert href.endswith("/favicon.svg")
    found = finders.find("favicon.svg")
    assert found and open(found, "rb").read().startswith(b"<svg ")  # noqa: SIM115


def test_a_page_without_the_base_template_names_no_icon(db):
    """The check above reads the link the base template writes: a JSON answer has none."""
    answer = Client().get("/.well-known/oauth-authorization-server")
    assert answer.status_code == 200 and not ICON_RE.search(answer.content.decode())
