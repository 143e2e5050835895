# Fixtures shared with other test packages are imported, not copied: the token factory, and the
# real OAuth flow's browser, app client and confidential client from tests/oauthflows.
from tests.oauthflows.conftest import api, confidential  # noqa: F401
from tests.scopes.tokens import issue_token  # noqa: F401
