import pytest

from operations.drain import drain_reset
from operations.readiness import readiness_forget

# The OAuth flow's approved app and its secret, imported rather than copied.
from tests.oauthflows.conftest import app, app_redirect_uris  # noqa: F401


@pytest.fixture(autouse=True)
def _fresh_readiness():
    readiness_forget()
    drain_reset()
    yield
    readiness_forget()
    drain_reset()
