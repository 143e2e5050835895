import pytest
from django.test import Client

from tests.security.credentials import Cast, logged_in


@pytest.fixture
def cast(owner, reviewer, end_user):
    """A developer's, a reviewer's and an end user's browsers, and the app's HTTP client."""
    return Cast(
        developer=logged_in(owner),
        reviewer=logged_in(reviewer),
        browser=logged_in(end_user),
        api=Client(enforce_csrf_checks=True),
    )


# The token factory of tests/scopes (a live access token for the end user), imported, not copied.
from tests.scopes.tokens import issue_token  # noqa: E402,F401
