"""Fixtures for the decode tests (helpers live in decode_helpers.py: a conftest is not importable by name)."""
import pytest

from tests.unit.decode.decode_helpers import Registry


@pytest.fixture
def registry():
    return Registry()
