# The OAuth flow's fixtures (a logged-in browser, the app client, the confidential, public and legacy
# clients), imported from tests/oauthflows rather than copied.
from tests.oauthflows.conftest import api, browser, confidential, legacy, public  # noqa: F401
