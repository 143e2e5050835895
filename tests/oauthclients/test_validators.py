import pytest
from django.core.exceptions import ValidationError

from oauthclients.validators import (
    MAX_REDIRECT_URIS,
    loopback_ip_redirect_without_port,
    validate_redirect_uri,
    validate_redirect_uris,
    validate_scope_names,
)


def refusal(validate, value) -> list[str]:
    """The error codes `validate` raises for `value` (and it must raise)."""
    with pytest.raises(ValidationError) as exc_info:
        validate(value)
    return [error.code for error in exc_info.value.error_list]


@pytest.mark.parametrize(
    "uri",
    [
        "https://app.example.com/callback",
        "https://app.example.com:8443/oauth/callback?tenant=42",
        # Loopback hosts may use plain http: native apps listen there (RFC 8252 §7.3).
        "http://localhost:8765/cb",
        "http://127.0.0.1/cb",
        "http://[::1]:9000/cb",
    ],
)
def test_it_accepts_https_and_loopback_http(uri):
    assert validate_redirect_uri(uri) == uri


@pytest.mark.parametrize(
    "uri",
    [
        "http://app.example.com/cb",
        "http://localhost.example.com/cb",
        "http://127.0.0.1.nip.io/cb",
        "http://10.0.0.1/cb",
    ],
)
def test_it_refuses_http_on_a_non_loopback_host(uri):
    assert refusal(validate_redirect_uri, uri) == ["redirect_uri_https"]


@pytest.mark.parametrize("uri", ["https://app.example.com/cb#done", "https://app.example.com/cb#"])
def test_it_refuses_a_fragment(uri):
    # RFC 6749 §3.1.2: the redirection endpoint URI MUST NOT include a fragment component.
    assert refusal(validate_redirect_uri, uri) == ["redirect_uri_fragment"]


@pytest.mark.parametrize(
    "uri",
    [
        "https://user@app.example.com/cb",
        "https://user:password@app.example.com/cb",
        "https://@app.example.com/cb",
        "https://app.example.com@evil.example.net/cb",
    ],
)
def test_it_refuses_userinfo(uri):
    assert refusal(validate_redirect_uri, uri) == ["redirect_uri_userinfo"]


@pytest.mark.parametrize("uri", ["https://*.example.com/cb", "https://app.*/cb"])
def test_it_refuses_a_wildcard_host(uri):
    assert refusal(validate_redirect_uri, uri) == ["redirect_uri_wildcard"]


@pytest.mark.parametrize(
    "uri, code",
    [
        ("", "redirect_uri_space"),
        (" https://app.example.com/cb", "redirect_uri_space"),
        ("https://app.example.com/a b", "redirect_uri_space"),
        ("https://app.example.com/" + "a" * 2000, "redirect_uri_length"),
        ("https://app.example.com/caf\u00e9", "redirect_uri_ascii"),
        ("https://app.example.com:port/cb", "redirect_uri_invalid"),
        ("/callback", "redirect_uri_invalid"),
        ("https:///callback", "redirect_uri_invalid"),
        ("javascript:alert(1)", "redirect_uri_scheme"),
        ("com.example.app:callback", "redirect_uri_invalid"),
        ("com.example.app://user@callback", "redirect_uri_invalid"),
        ("com.example.app:/cb#frag", "redirect_uri_fragment"),
    ],
)
def test_it_refuses_what_is_not_an_absolute_http_url(uri, code):
    assert refusal(validate_redirect_uri, uri) == [code]


@pytest.mark.parametrize(
    "uri",
    [
        # A browser reads a backslash as "/": this one sends codes to evil.example.net.
        "https://evil.example.net\\.app.example.com/cb",
        "https://app.example.com\\@evil.example.net/cb",
        "https://app.example.com/cb?next=<script>",
        'https://app.example.com/"cb"',
        # Percent-encoding in the host hides its name from the reviewer ("%65" is "e").
        "https://%65vil.example.net/cb",
    ],
)
def test_it_refuses_what_a_browser_would_read_differently(uri):
    assert refusal(validate_redirect_uri, uri) == ["redirect_uri_invalid"]


def ten_uris() -> list[str]:
    return [f"https://app.example.com/cb/{n}" for n in range(MAX_REDIRECT_URIS)]


def test_it_accepts_ten_redirect_uris_in_their_order():
    assert validate_redirect_uris(ten_uris()) == ten_uris()


def test_it_refuses_an_eleventh_redirect_uri():
    eleven = [*ten_uris(), "https://app.example.com/cb/eleven"]
    assert refusal(validate_redirect_uris, eleven) == ["redirect_uris_too_many"]


def test_a_repeated_uri_counts_once():
    assert validate_redirect_uris([*ten_uris(), ten_uris()[0]]) == ten_uris()


def test_it_refuses_an_empty_list():
    assert refusal(validate_redirect_uris, []) == ["redirect_uris_empty"]


def test_it_reports_every_bad_uri_at_once():
    uris = ["http://app.example.com/cb", "https://app.example.com/ok", "https://x.example.com/#f"]
    assert refusal(validate_redirect_uris, uris) == ["redirect_uri_https", "redirect_uri_fragment"]


def test_it_accepts_catalog_scopes():
    assert validate_scope_names(["PROFILE_READ", "ORG_BOOKING_WRITE"]) == ["PROFILE_READ", "ORG_BOOKING_WRITE"]


@pytest.mark.parametrize("names", [[], [""], ["  "]])
def test_it_refuses_empty_scopes(names):
    assert refusal(validate_scope_names, names) == ["scopes_empty"]


@pytest.mark.parametrize("names", [["PROFILE_READ", "ADMIN"], ["profile_read"]])
def test_it_refuses_an_unknown_scope(names):
    with pytest.raises(ValidationError) as exc_info:
        validate_scope_names(names)
    (error,) = exc_info.value.error_list
    assert (error.code, error.message) == ("scope_unknown", f"Unknown scope: {names[-1]}")


def test_too_many_uris_are_reported_by_count_alone_without_echoing_them():
    uris = [f"ftp://bad{i}.example.com/{'x' * 50}" for i in range(5000)]
    with pytest.raises(ValidationError) as exc_info:
        validate_redirect_uris(uris)
    assert len(exc_info.value.messages) == 1
    assert "at most 10" in exc_info.value.messages[0] and "bad1" not in exc_info.value.messages[0]


@pytest.mark.parametrize(
    "uri",
    ["com.example.app:/oauth/callback", "com.example.app://oauth/callback", "io.github.someone.my-app:/cb?x=1"],
)
def test_it_accepts_a_native_apps_private_use_scheme_in_reverse_domain_form(uri):
    # RFC 8252 §7.1.
    assert validate_redirect_uri(uri) == uri


@pytest.mark.parametrize("uri", ["myapp:/oauth/callback", "myapp://callback", "Com.Example.App:/cb", "data:/x"])
def test_it_refuses_a_custom_scheme_that_is_not_a_reverse_domain_and_says_why(uri):
    with pytest.raises(ValidationError) as exc_info:
        validate_redirect_uri(uri)
    assert [error.code for error in exc_info.value.error_list] == ["redirect_uri_scheme"]
    message = exc_info.value.messages[0]
    assert "reverse domain" in message and "com.example.app:/oauth/callback" in message and "RFC 8252" in message


@pytest.mark.parametrize(
    "uri, expected",
    [
        ("http://127.0.0.1:51234/cb?x=1", "http://127.0.0.1/cb?x=1"),
        ("http://127.0.0.1/cb", "http://127.0.0.1/cb"),
        ("http://[::1]:8080/", "http://[::1]/"),
        ("http://localhost:8080/cb", None),  # RFC 8252 §8.3: localhost keeps exact matching
        ("https://127.0.0.1:8080/cb", None),
        ("http://127.0.0.1:0/cb", None),
        ("http://127.0.0.1:65536/cb", None),
        ("http://127.0.0.1:80@evil.example.net/cb", None),
        ("http://127.0.0.1:80\\evil.example.net/cb", None),
        ("http://127.0.0.1:80/cb#x", None),
        ("http://127.0.0.10/cb", None),
    ],
)
def test_loopback_ip_redirects_are_compared_without_their_port(uri, expected):
    assert loopback_ip_redirect_without_port(uri) == expected


@pytest.mark.parametrize(
    "uri",
    [
        "",
        "https://api.example.com/a b",
        "https://api.example.com:port/",
        "https://api.example.com/?q=1",
        "https://user:pw@api.example.com/",
        "https:///path",
        "ftp://api.example.com/",
    ],
)
def test_each_resource_uri_problem_is_a_whole_sentence_in_the_administrators_language(uri):
    from django.core.exceptions import ValidationError
    from django.utils import translation

    from oauthclients.validators import validate_resource_uri

    with pytest.raises(ValidationError) as english:
        validate_resource_uri(uri)
    with translation.override("de"), pytest.raises(ValidationError) as german:
        validate_resource_uri(uri)
    assert english.value.messages[0].startswith("The resource URI ")
    assert german.value.messages[0].startswith("Die Ressourcen-URI ")
