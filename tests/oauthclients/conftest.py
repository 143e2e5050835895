# The flow fixtures of tests/oauthflows, for the cleanup tests that issue real tokens.
from tests.oauthflows.conftest import api, confidential  # noqa: F401
