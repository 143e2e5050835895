"""The authenticator app's set-up page shows its QR code within the site's Content-Security-Policy
(drawn into the page: the policy has no data: images), offers the otpauth:// link for an app on the
same phone, and the secret as wrapping text with a copy button. The browser's side (rendered, no
CSP violation, 390 px) is tests/browser/test_sign_up_and_authenticator_app.py."""

import re
from urllib.parse import parse_qs, urlsplit

import qrcode

from plumbing.securityheaders import CONTENT_SECURITY_POLICY
from tests.accounts.helpers import log_in

ACTIVATE = "/accounts/2fa/totp/activate/"


def modules_drawn(svg: str) -> set[tuple[int, int]]:
    """The dark modules the SVG's path draws (one `Mx,yh1v1h-1z` square each)."""
    (path,) = re.findall(r'<path d="([^"]*)"', svg)
    squares = re.findall(r"M(\d+),(\d+)h1v1h-1z", path)
    assert "".join(f"M{x},{y}h1v1h-1z" for x, y in squares) == path  # nothing else in it
    return {(int(x), int(y)) for x, y in squares}


def test_the_qr_code_is_in_the_page_and_draws_the_otpauth_url(end_user):
    browser, _ = log_in("enduser")
    page = browser.get(ACTIVATE)
    html = page.content.decode()
    assert page.status_code == 200
    assert page["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "default-src 'self'" in CONTENT_SECURITY_POLICY and "img-src" not in CONTENT_SECURITY_POLICY
    assert "data:image" not in html and "<img" not in html.split('<main class="container" id="main">')[1]
    svg = re.search(r'<svg class="totp-qr".*?</svg>', html, re.S)[0]
    assert 'role="img"' in svg and 'aria-label="QR code for your authenticator app"' in svg
    assert "<script" not in svg and "style=" not in svg  # nothing the policy would block

    url = page.context["totp_url"]
    secret = page.context["form"].secret
    parts = urlsplit(url)
    assert parts.scheme == "otpauth" and parts.netloc == "totp"
    assert parse_qs(parts.query) == {"secret": [secret], "issuer": ["testserver"]}
    expected = qrcode.QRCode(border=4)
    expected.add_data(url)
    expected.make(fit=True)
    matrix = expected.get_matrix()
    assert modules_drawn(svg) == {(x, y) for y, row in enumerate(matrix) for x, dark in enumerate(row) if dark}
    assert f'viewBox="0 0 {len(matrix)} {len(matrix)}"' in svg


def test_the_page_offers_the_otpauth_link_and_the_secret_to_copy(end_user):
    browser, _ = log_in("enduser")
    page = browser.get(ACTIVATE)
    html = page.content.decode()
    secret = page.context["form"].secret
    link = re.search(r'<a href="([^"]+)" id="totp_link">', html)[1]
    assert link.replace("&amp;", "&") == page.context["totp_url"]
    assert f'<code class="mono totp-secret" id="authenticator_secret">{secret}</code>' in html
    assert 'data-copy-target="authenticator_secret"' in html and "Copy secret" in html
