"""When nbval runs the notebooks, each notebook's kernel keeps a plan record and one more item checks it.

``LABKIT_PLAN_RECORD`` is set to a file per notebook before nbval starts that notebook's kernel, so the engine
appends every costed explain and profiled operation to it (labkit/engine/query/explain_doc.py, record_plan).
After the notebook's last cell, the item ``<notebook>::one query, one cost`` reads the record and checks that
the same query on the same data and indexes has one cost (tests/test_one_cost.py). It costs no extra run.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

RECORD_ENV = "LABKIT_PLAN_RECORD"
ITEM_NAME = "one query, one cost"


def _records_dir(config: pytest.Config) -> Path:
    found = getattr(config, "_labkit_plan_records", None)
    if found is None:
        found = config._labkit_plan_records = config._tmp_path_factory.mktemp("plan_records")  # type: ignore[attr-defined]
    return found


def _record_file(config: pytest.Config, notebook: Path) -> Path:
    return _records_dir(config) / f"{notebook.stem}.jsonl"


class OneCost(pytest.Item):
    """Checks the plan record of the notebook whose cells ran just before."""

    def runtest(self) -> None:
        from test_one_cost import check_notebook

        check_notebook(self.path.stem, _record_file(self.config, self.path), self.path)

    def repr_failure(self, excinfo, style=None):  # noqa: ANN001, ANN201 - pytest's signature
        """The check's own message: the pytest machinery around it says nothing about the lesson."""
        if isinstance(excinfo.value, AssertionError):
            return str(excinfo.value).split("\nassert ")[0]
        return super().repr_failure(excinfo, style=style)


def _is_cell(item: pytest.Item) -> bool:
    return type(item).__name__ == "IPyNbCell"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):  # noqa: ANN201 - a hook wrapper
    """While the first cell of a notebook starts its kernel, point the record at that notebook's file (only the
    kernel gets the variable: the tests that run in this process afterwards record nothing)."""
    if not (_is_cell(item) and getattr(item.parent, "kernel", None) is None):
        yield
        return
    path = _record_file(item.config, item.path)
    path.unlink(missing_ok=True)
    before = os.environ.get(RECORD_ENV)
    os.environ[RECORD_ENV] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(RECORD_ENV, None)
        else:
            os.environ[RECORD_ENV] = before


@pytest.hookimpl(trylast=True)  # after -k / -m deselection: only notebooks whose every cell runs
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """After each notebook's last cell, its one-cost item (same parent: same worker, kernel still running)."""
    last: dict = {}
    count: dict = {}
    for i, item in enumerate(items):
        if _is_cell(item):
            last[item.parent] = i
            count[item.parent] = count.get(item.parent, 0) + 1
    here = Path(__file__).resolve().parent  # the lessons here; not the student copies (students/) nbval also runs
    for parent, i in sorted(last.items(), key=lambda x: -x[1]):
        if Path(parent.path).resolve().parent != here:
            continue
        if count[parent] == sum(c.cell_type == "code" for c in parent.nb.cells):
            items.insert(i + 1, OneCost.from_parent(parent, name=ITEM_NAME))
