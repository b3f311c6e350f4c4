"""How ``dev.py test`` spreads the suite over pytest-xdist's workers: the longest work first.

With ``--dist loadfile`` xdist hands each worker one file at a time (nbval needs every cell of a notebook in one
kernel, in order) and, by default, starts with the files that have the most tests. The most tests is not the
longest: a notebook of 40 cells can take a minute, a file of 300 table tests two seconds. Whatever starts last
decides when the run ends, so this scheduler orders the work by the seconds each unit took in a recorded run
(``tests/durations.json``), longest first (the longest-processing-time rule), and makes each served-notebook run
(``tests/test_notebooks_served.py``, one notebook each) a unit of its own, so both workers share them.

A unit the record does not know yet (a new test file or lesson) is estimated from its number of items and the
record's median seconds per item of its kind (notebook cells, browser tests, other tests; 5 s per browser test
when the record has none), so a new long lesson or browser file is not left for the end. ``--store-durations`` rewrites the record from the run it finishes (see README, "Tests").
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

RECORD = Path(__file__).resolve().parent / "durations.json"
SPLIT_FILES = ("tests/test_notebooks_served.py",)  # each of their parametrized tests is a unit of its own


def unit_of(nodeid: str) -> str:
    """The unit of work (what one worker runs as a whole) that test ``nodeid`` belongs to: its file, or for
    the files in SPLIT_FILES, the test itself (a served-notebook run keeps its own kernel and server)."""
    path = nodeid.split("::", 1)[0]
    return nodeid if path in SPLIT_FILES else path


def _kind(unit: str) -> str:
    """What a unit's items are, for estimating a unit the record lacks: notebook cells, browser tests (each
    opens and runs a notebook in JupyterLab: seconds, not milliseconds) or other tests."""
    if unit.endswith(".ipynb"):
        return "notebook"
    return "browser" if unit.startswith("tests/browser/") else "test"


def load_record(path: Path = RECORD) -> dict[str, dict]:
    """``{unit: {"seconds": s, "items": n}}`` from the record, empty when there is none or it is unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    units = data.get("units", {}) if isinstance(data, dict) else {}
    return {k: v for k, v in units.items() if isinstance(v, dict) and isinstance(v.get("seconds"), (int, float))}


def estimates(units: dict[str, int], record: dict[str, dict]) -> dict[str, float]:
    """Seconds expected for each unit (``units``: unit -> number of items): the recorded seconds, or the items
    times the recorded median seconds per item of the same kind (notebook or not)."""
    per_item: dict[str, float] = {}
    for kind, default in (("notebook", 0.05), ("browser", 5.0), ("test", 0.05)):
        rates = [v["seconds"] / v["items"] for k, v in record.items() if _kind(k) == kind and v.get("items")]
        per_item[kind] = statistics.median(rates) if rates else default
    return {unit: (record[unit]["seconds"] if unit in record else count * per_item[_kind(unit)])
            for unit, count in units.items()}


def longest_first(units: dict[str, int], record: dict[str, dict]) -> list[str]:
    """``units`` ordered by their expected seconds, longest first (ties: as collected)."""
    expected = estimates(units, record)
    order = {unit: i for i, unit in enumerate(units)}
    return sorted(units, key=lambda u: (-expected[u], order[u]))


def make_scheduler(config: pytest.Config, log):  # noqa: ANN001, ANN201 - xdist's hook signature
    """xdist's loadfile scheduler with :func:`unit_of` as its unit and the units handed out longest first."""
    from xdist.scheduler import LoadFileScheduling

    record = load_record()

    class LongestFirst(LoadFileScheduling):
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _assign_work_unit(self, node) -> None:  # noqa: ANN001 - xdist's WorkerController
            if not self._ordered:  # the work queue is complete at the first assignment; order it once
                self._ordered = True
                units = {unit: len(ids) for unit, ids in self.workqueue.items()}
                queue = {unit: self.workqueue[unit] for unit in longest_first(units, record)}
                self.workqueue.clear()
                self.workqueue.update(queue)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)


class DurationRecorder:
    """With ``--store-durations``: adds up each unit's seconds (setup, call and teardown of its items) as the
    reports arrive and writes the record at the end of the run (all units seen, including ones not rerun)."""

    def __init__(self) -> None:
        self.units: dict[str, dict] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.units.setdefault(unit_of(report.nodeid), {"seconds": 0.0, "items": 0})
        entry["seconds"] += report.duration
        if report.when == "call" or (report.when == "setup" and report.skipped):
            entry["items"] += 1

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        root = Path(str(session.config.rootpath))
        units = {k: v for k, v in load_record().items() if (root / k.split("::", 1)[0]).exists()}
        units.update({k: {"seconds": round(v["seconds"], 2), "items": v["items"]} for k, v in self.units.items()})
        RECORD.write_text(json.dumps({
            "about": "seconds per unit of work in one run of the suite, for tests/suite_schedule.py (longest first); "
                     "rewrite with `python3 dev.py test --store-durations`",
            "units": dict(sorted(units.items())),
        }, indent=1) + "\n")
