import pytest

from .tiny import one_thread


@pytest.fixture(autouse=True)
def _single_thread():
    with one_thread():
        yield
