import pytest

from operations.drain import drain_reset
from operations.readiness import readiness_forget


@pytest.fixture(autouse=True)
def _fresh_readiness():
    readiness_forget()
    drain_reset()
    yield
    readiness_forget()
    drain_reset()
