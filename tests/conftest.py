"""Test-wide settings: exercise checks record progress into a temporary file, never the developer's home; with
pytest-xdist (``dev.py test``), the work is handed out longest first (tests/suite_schedule.py)."""
from __future__ import annotations

import pytest

import suite_schedule


@pytest.fixture(autouse=True)
def _progress_file(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_PROGRESS_FILE", str(tmp_path / "progress.json"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store-durations", action="store_true", default=False,
                     help="write each unit's seconds in this run into tests/durations.json (tests/suite_schedule.py)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("store_durations") and not hasattr(config, "workerinput"):  # the controller only
        config.pluginmanager.register(suite_schedule.DurationRecorder(), "schema-lab-durations")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN001, ANN201 - xdist's hook
    """``--dist loadfile`` (what ``dev.py test`` asks for): the longest units first; other modes: xdist's own."""
    return suite_schedule.make_scheduler(config, log) if config.getoption("dist") == "loadfile" else None
