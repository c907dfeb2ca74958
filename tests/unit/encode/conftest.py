"""Every encode test also checks that no vectorized encoder silently fell back to the
per-record path (which would make the fast ≡ reference comparisons trivially true)."""
import pytest


@pytest.fixture(autouse=True)
def no_silent_fallback():
    from connector.formats.core._encode_options import FALLBACKS

    before = dict(FALLBACKS)
    yield
    assert dict(FALLBACKS) == before, f"vectorized encoder fell back: {dict(FALLBACKS)}"
