"""The suite's scheduler (tests/suite_schedule.py): units of work, and the longest handed out first."""
from __future__ import annotations

import json

import suite_schedule as s

SERVED = "tests/test_notebooks_served.py::test_notebook_runs_against_served_engine[12_computed]"


def test_a_unit_is_a_file_except_each_served_notebook_run():
    assert s.unit_of("tests/test_seed.py::test_x[1]") == "tests/test_seed.py"
    assert s.unit_of("notebooks/04_follows.ipynb::Cell 3") == "notebooks/04_follows.ipynb"
    assert s.unit_of("notebooks/04_follows.ipynb::one query, one cost") == "notebooks/04_follows.ipynb"
    assert s.unit_of(SERVED) == SERVED
    assert s.unit_of("tests/test_notebooks_served.py::test_every_notebook_is_listed") == \
        "tests/test_notebooks_served.py::test_every_notebook_is_listed"


def test_longest_first_by_the_record_and_unknown_units_estimated_by_kind():
    record = {"tests/a.py": {"seconds": 2.0, "items": 100}, "tests/b.py": {"seconds": 30.0, "items": 10},
              "notebooks/x.ipynb": {"seconds": 20.0, "items": 20}, SERVED: {"seconds": 60.0, "items": 1}}
    units = {"tests/a.py": 100, "tests/b.py": 10, "notebooks/x.ipynb": 20, SERVED: 1,
             "notebooks/new.ipynb": 40, "tests/new.py": 5}
    # new notebook: 40 cells x 1 s (the only notebook's rate); new file: 5 x median(0.02, 3, 60) = 15 s
    assert s.estimates(units, record)["notebooks/new.ipynb"] == 40.0
    assert s.estimates(units, record)["tests/new.py"] == 15.0
    assert s.longest_first(units, record) == [SERVED, "notebooks/new.ipynb", "tests/b.py", "notebooks/x.ipynb",
                                             "tests/new.py", "tests/a.py"]
    assert s.longest_first({"tests/p.py": 1, "tests/q.py": 1}, {}) == ["tests/p.py", "tests/q.py"]  # as collected
    # a browser file the record lacks is not taken for a file of quick tests: 40 x 5 s, before everything else
    assert s.estimates({"tests/browser/test_new.py": 40}, record)["tests/browser/test_new.py"] == 200.0
    assert s.longest_first({**units, "tests/browser/test_new.py": 40}, record)[0] == "tests/browser/test_new.py"


def test_a_missing_or_broken_record_means_no_record(tmp_path):
    assert s.load_record(tmp_path / "none.json") == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert s.load_record(tmp_path / "bad.json") == {}
    (tmp_path / "odd.json").write_text(json.dumps({"units": {"a": {"seconds": "x"}, "b": {"seconds": 1}}}))
    assert s.load_record(tmp_path / "odd.json") == {"b": {"seconds": 1}}


def test_the_committed_record_names_units_of_this_suite():
    record = s.load_record()
    assert record, "tests/durations.json: run `python3 dev.py test --store-durations`"
    assert any(u.startswith("notebooks/") for u in record) and any("::" in u for u in record)
    # recorded from the README's whole command: the browser files too, else they are handed out by estimate
    assert any(u.startswith("tests/browser/") for u in record)
    assert all(v["seconds"] >= 0 and v.get("items", 0) >= 1 for v in record.values())
