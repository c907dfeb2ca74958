"""Fixtures for the Spark integration tests."""
from __future__ import annotations

import pytest


@pytest.fixture()
def write_doc(tmp_path):
    def _write(text: str, name: str = "doc.yaml") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return _write
