"""The one-statement redemption (tokens/redemption.py) and the ORM's full path give the same
answers and leave the same rows, scenario by scenario, on PostgreSQL: each scenario runs once with
OAUTH_FAST_REDEMPTION on and once off, on a client of its own, and the two records are compared."""

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from oauthclients.models import AccessToken, Grant, RefreshToken, digest
from tests.factories import make_client
from tests.oauthflows.helpers import exchange, get_code, pkce_pair, refresh

pytestmark = pytest.mark.postgres_only


def answer(response) -> tuple:
    body = response.json()
    return response.status_code, body.get("error"), sorted(set(body) - {"error_description"})


def rows(client) -> dict:
    """Every row the redemptions touched, with values that do not depend on time or randomness."""
    return {
        "grants": sorted(
            (g.used_at is not None, g.token_family is not None, g.scope, tuple(g.resource))
            for g in Grant.objects.filter(application=client)
        ),
        "access": sorted(
            (a.scope, tuple(a.resource), a.source_refresh_token_id is not None, a.token_family is not None)
            for a in AccessToken.objects.filter(application=client)
        ),
        # Each access token is in its refresh token's family (tokens.services: the lineage).
        "access in its family": all(
            r.token_family == r.access_token.token_family
            for r in RefreshToken.objects.filter(application=client, access_token__isnull=False).select_related(
                "access_token"
            )
        ),
        "refresh": sorted(
            (r.revoked is not None, r.access_token_id is not None, tuple(r.resource))
            for r in RefreshToken.objects.filter(application=client)
        ),
        "families": len(set(RefreshToken.objects.filter(application=client).values_list("token_family", flat=True))),
    }


def scenario(browser, api, owner, name: str) -> dict:
    created = make_client(
        owner,
        name=name,
        scopes=["PROFILE_READ", "BOOKING_READ"],
        redirect_uris=["https://app.example.com/callback"],
        approve=True,
    )
    client, secret = created.client, created.secret.plaintext
    record = {}

    # An exchange that succeeds, its replay, and a refresh of what it gave.
    code = get_code(browser, client, scope="PROFILE_READ BOOKING_READ")
    first = exchange(api, client, code, secret=secret)
    record["exchange"] = answer(first)
    record["replay"] = answer(exchange(api, client, code, secret=secret))  # revokes the family
    record["refresh after replay"] = answer(refresh(api, client, first.json()["refresh_token"], secret=secret))

    # A refresh that succeeds, then the rotated token presented again after the grace.
    tokens = exchange(api, client, get_code(browser, client), secret=secret).json()
    renewed = refresh(api, client, tokens["refresh_token"], secret=secret)
    record["refresh"] = answer(renewed)
    RefreshToken.objects.filter(token_checksum=digest(tokens["refresh_token"])).update(
        revoked=timezone.now() - timedelta(minutes=5)
    )
    record["rotated replay"] = answer(refresh(api, client, tokens["refresh_token"], secret=secret))
    record["refresh of the revoked family"] = answer(
        refresh(api, client, renewed.json()["refresh_token"], secret=secret)
    )

    # Refusals: a wrong redirect URI, an expired code, a narrowed scope, a bound audience.
    code = get_code(browser, client)
    record["wrong redirect"] = answer(exchange(api, client, code, secret=secret, redirect_uri="https://x.example/cb"))
    record["then right"] = answer(exchange(api, client, code, secret=secret))
    code = get_code(browser, client)
    Grant.objects.filter(code=digest(code)).update(expires=timezone.now() - timedelta(seconds=1))
    record["expired"] = answer(exchange(api, client, code, secret=secret))
    tokens = exchange(api, client, get_code(browser, client, scope="PROFILE_READ BOOKING_READ"), secret=secret).json()
    record["narrowed"] = answer(refresh(api, client, tokens["refresh_token"], secret=secret, scope="PROFILE_READ"))
    code = get_code(browser, client, resource=django_settings.OAUTH_RESOURCE_URI)
    record["bound"] = answer(exchange(api, client, code, secret=secret))
    record["rows"] = rows(client)
    return record


def pkce_scenario(browser, api, owner, name: str) -> dict:
    public = make_client(
        owner, name=name, kind="public", redirect_uris=["http://127.0.0.1:9000/cb"], approve=True
    ).client
    verifier, challenge = pkce_pair()
    wrong, _ = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge, code_challenge_method="S256")
    record = {
        "wrong verifier": answer(exchange(api, public, code, verifier=wrong)),
        "no verifier": answer(exchange(api, public, code)),
        "right verifier": answer(exchange(api, public, code, verifier=verifier)),
    }
    record["rows"] = rows(public)
    return record


@pytest.mark.parametrize("run", [scenario, pkce_scenario])
def test_both_paths_answer_alike_and_leave_the_same_rows(settings, browser, api, owner, run):
    settings.OAUTH_FAST_REDEMPTION = True
    with CaptureQueriesContext(connection) as fast_queries:
        fast = run(browser, api, owner, "Fast")
    settings.OAUTH_FAST_REDEMPTION = False
    with CaptureQueriesContext(connection) as full_queries:
        full = run(browser, api, owner, "Full")
    assert fast == full
    assert fast["rows"]["access in its family"]
    # The comparison means something: the first run used the claims, the second never did.
    assert any(q["sql"].startswith(('UPDATE "oauthclients_grant"', "WITH old AS")) for q in fast_queries)
    assert not any(
        q["sql"].startswith(('UPDATE "oauthclients_grant" SET "used_at"', "WITH old AS")) for q in full_queries
    )
    assert any("FOR UPDATE" in q["sql"] for q in full_queries)
