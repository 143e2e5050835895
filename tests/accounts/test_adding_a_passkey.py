"""The "Add a passkey" page: a new passkey is named after the device it is added on (not allauth's
"Master key") and signs in on its own unless unticked (accounts.forms.AddWebAuthnForm)."""

import json
import re

import pytest
from allauth.mfa.models import Authenticator

from accounts.passkeys import passkey_default_name
from tests.accounts.helpers import SoftPasskey, log_in

ADD_PASSKEY = "/accounts/2fa/webauthn/add/"

IPHONE_SAFARI = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Mobile/15E148 Safari/604.1"
)
ANDROID_CHROME = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 "
    "Mobile Safari/537.36"
)
WINDOWS_EDGE = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 "
    "Safari/537.36 Edg/126.0.0.0"
)
MAC_FIREFOX = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:127.0) Gecko/20100101 Firefox/127.0"
IPHONE_CHROME = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1"
)
SAMSUNG = (
    "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
    "SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36"
)
CHROMEBOOK = (
    "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
)


@pytest.mark.parametrize(
    "user_agent, name",
    [
        (IPHONE_SAFARI, "Safari on iPhone"),
        (ANDROID_CHROME, "Chrome on Android"),
        (WINDOWS_EDGE, "Edge on Windows"),
        (MAC_FIREFOX, "Firefox on Mac"),
        (IPHONE_CHROME, "Chrome on iPhone"),
        (SAMSUNG, "Samsung Internet on Android"),
        (CHROMEBOOK, "Chrome on ChromeOS"),
        ("curl/8.5.0", "Passkey"),
        ("", "Passkey"),
    ],
)
def test_a_passkey_is_named_after_the_device(user_agent, name):
    assert passkey_default_name(user_agent=user_agent, taken=set()) == name


def test_a_second_passkey_from_the_same_device_gets_another_name():
    taken = {"Chrome on Android", "Chrome on Android (2)"}
    assert passkey_default_name(user_agent=ANDROID_CHROME, taken=taken) == "Chrome on Android (3)"


def checkbox_ticked(html: str) -> bool:
    box = re.search(r'<input type="checkbox" name="passwordless"[^>]*>', html)
    assert box, "no passwordless checkbox on the page"
    return " checked" in box[0]


def test_the_page_offers_the_devices_name_and_a_sign_in_passkey(end_user):
    browser, _ = log_in("enduser")
    page = browser.get(ADD_PASSKEY, HTTP_USER_AGENT=IPHONE_SAFARI)
    html = page.content.decode()
    assert page.status_code == 200
    assert 'value="Safari on iPhone"' in html and "Master key" not in html
    assert checkbox_ticked(html)


def test_a_passkey_added_without_a_name_is_named_after_the_device_and_signs_in(end_user):
    browser, _ = log_in("enduser")
    browser.get(ADD_PASSKEY, HTTP_USER_AGENT=ANDROID_CHROME)
    registration = SoftPasskey().register(browser)
    added = browser.post(
        ADD_PASSKEY,
        {"name": "", "passwordless": "on", "credential": json.dumps(registration)},
        HTTP_USER_AGENT=ANDROID_CHROME,
    )
    assert added.status_code == 302, added.content[:500]
    (passkey,) = Authenticator.objects.filter(user=end_user, type=Authenticator.Type.WEBAUTHN)
    assert passkey.wrap().name == "Chrome on Android"
    # The next one on the same phone is told apart; it too is offered as a sign-in passkey.
    page = browser.get(ADD_PASSKEY, HTTP_USER_AGENT=ANDROID_CHROME).content.decode()
    assert 'value="Chrome on Android (2)"' in page and checkbox_ticked(page)


def test_unticked_it_stays_a_second_factor(end_user):
    # The box unticked: the form says not passwordless, as allauth's did by default.
    browser, _ = log_in("enduser")
    page = browser.get(ADD_PASSKEY)
    form_class = type(page.context["form"])
    unticked = form_class(data={"name": "Key", "credential": "{}"}, user=end_user)
    ticked = form_class(user=end_user)
    assert unticked["passwordless"].value() is False
    assert ticked["passwordless"].value() is True
