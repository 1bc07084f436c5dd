import pytest

from tests.training.tiny import one_thread


@pytest.fixture(autouse=True)
def _single_thread():
    with one_thread():
        yield
