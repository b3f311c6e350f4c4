"""Test-wide settings: exercise checks record progress into a temporary file, never the developer's home."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _progress_file(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_PROGRESS_FILE", str(tmp_path / "progress.json"))
