# The OAuth flow's fixtures (the app client, the confidential, public and legacy clients, the
# app and its tokens), imported from tests/oauthflows rather than copied.
from tests.oauthflows.conftest import (  # noqa: F401
    api,
    app,
    app_redirect_uris,
    confidential,
    legacy,
    public,
    token_scope,
    tokens,
)
