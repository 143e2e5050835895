# The real OAuth flow's fixtures from tests/oauthflows, imported rather than copied.
from tests.oauthflows.conftest import api, confidential, legacy, token_scope, tokens  # noqa: F401
