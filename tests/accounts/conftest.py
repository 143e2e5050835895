# The OAuth flow's approved app and its secret (the app whose ID tokens tests/accounts/test_amr_acr.py
# reads), imported from tests/oauthflows rather than copied.
from tests.oauthflows.conftest import app, app_redirect_uris  # noqa: F401
