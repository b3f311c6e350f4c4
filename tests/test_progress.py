"""Exercise outcomes and progress tracking (issue: exercises that prove understanding, item 5).

The outcome kinds follow Kaggle learntools' checker model: not attempted, incorrect, the learner's own exception
caught, correct. A check never raises."""
from __future__ import annotations

import json
import os
import stat

import pytest

import labkit
from labkit import exercises, tracking
from labkit.__main__ import main as cli


def _workload():
    """The recipe site's workload of lesson 00's first exercise, unranked as the notebook builds it."""
    import pandas as pd

    from labkit.exercises.lessons.l00_start_here import RECIPE_COLUMNS, RECIPE_WORKLOAD
    return pd.DataFrame(list(RECIPE_WORKLOAD), columns=list(RECIPE_COLUMNS))


def test_outcomes_are_recorded_in_order():
    ex = exercises.get("00-rank-workload")
    assert ex.check(None).outcome == "not-attempted"
    assert labkit.progress().set_index("exercise").loc["00-rank-workload", "status"] == "not started"
    wrong = ex.check(_workload())
    assert wrong.outcome == "incorrect" and repr(wrong).startswith("Not yet: ")
    row = labkit.progress().set_index("exercise").loc["00-rank-workload"]
    assert (row["status"], row["attempts"]) == ("attempted", 1)
    right = ex.check(_workload().sort_values("per_second", ascending=False))
    assert right.outcome == "correct" and repr(right).startswith("Correct! ")
    row = labkit.progress().set_index("exercise").loc["00-rank-workload"]
    assert (row["status"], row["attempts"]) == ("passed", 2) and row["passed_at"]
    # a later wrong answer does not take the pass away
    ex.check(_workload())
    assert labkit.progress().set_index("exercise").loc["00-rank-workload", "status"] == "passed"
    data = json.loads(tracking.progress_file().read_text())
    assert data["exercises"]["00-rank-workload"]["attempts"] == 3


def test_every_exercise_is_listed_not_started_at_first():
    df = labkit.progress()
    assert list(df["exercise"]) == exercises.ids()
    assert set(df["status"]) == {"not started"}
    assert tracking.summary().startswith(f"0 passed, 0 attempted, {len(df)} not started")


def test_the_learners_own_exception_is_caught_and_named():
    def broken(*args, **kwargs):
        return 1 / 0

    ex = exercises.get("12-computed-stats")
    result = ex.check(broken)
    assert result.outcome == "error" and not result
    assert "ZeroDivisionError" in result.message and "Run your code on its own" in result.message
    assert repr(result).startswith("Not yet (an error was raised): ")


def test_a_checker_gap_is_reported_not_raised(monkeypatch):
    ex = exercises.get("00-rank-workload")

    # every frame is labkit's own code (exercises.get given a DataFrame), so it is a checker gap
    monkeypatch.setattr(ex, "checker", exercises.get)
    result = ex.check(_workload())
    assert result.outcome == "error" and "checker could not check" in result.message


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True,
                    reason="root ignores file permissions")
def test_unwritable_progress_file_does_not_break_a_check(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    monkeypatch.setenv(tracking.ENV_FILE, str(ro / "p.json"))
    assert exercises.get("00-rank-workload").check(_workload()).outcome == "incorrect"


def test_progress_file_that_is_a_directory_does_not_break_a_check(tmp_path, monkeypatch):
    (tmp_path / "dir.json").mkdir()
    monkeypatch.setenv(tracking.ENV_FILE, str(tmp_path / "dir.json"))
    assert exercises.get("00-rank-workload").check(_workload()).outcome == "incorrect"
    assert set(labkit.progress()["status"]) == {"not started"}


def test_server_record_is_kept_in_the_learners_database(monkeypatch):
    client = labkit.connect("embedded")
    coll = client["sl_test_progress"][tracking.PROGRESS_COLLECTION]
    monkeypatch.setattr(tracking, "_remote_collection", lambda: coll)
    ex = exercises.get("00-rank-workload")
    ex.check(_workload())
    ex.check(_workload().sort_values("per_second", ascending=False))
    doc = coll.find_one({"_id": "00-rank-workload"})
    assert doc["attempts"] == 2 and doc["last_outcome"] == "correct" and doc["passed_at"]
    row = tracking.progress(coll).set_index("exercise").loc["00-rank-workload"]
    assert (row["status"], row["attempts"]) == ("passed", 2)


def test_cli_progress_prints_the_table(capsys, monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    exercises.get("00-rank-workload").check(_workload())
    assert cli(["progress", "--lesson", "00"]) == 0
    out = capsys.readouterr().out
    assert "00-rank-workload" in out and "attempted" in out and "01-embed-atomic" not in out
    assert "0 passed, 1 attempted" in out


def _prediction(**kw):
    from labkit.exercises import Prediction
    return Prediction(id="xx-predict-test", lesson="xx_test", task="How many keys?", checker=None,
                      explain=lambda n: f"the index walks {n} keys.", **kw)


def test_prediction_checked_against_the_measurement():
    p = _prediction(tolerance=0.1)
    first = p.check(20)
    assert first.outcome == "not-attempted" and "ex.predict" in first.message
    assert "recorded" in p.predict(21)
    result = p.check(20)
    assert result.correct and "you predicted 21 and it is 20" in result.message and "walks 20 keys" in result.message
    p.predict(40)
    wrong = p.check(20)
    assert wrong.outcome == "incorrect" and "the measurement says 20" in wrong.message


def test_prediction_choices_and_kinds():
    p = _prediction(choices=("IXSCAN", "COLLSCAN"))
    assert "Nothing recorded" in p.predict("FETCH")
    p.predict(" ixscan ")
    assert p.check("IXSCAN").correct
    b = _prediction()
    b.predict(True)
    assert not b.check(1).correct  # a bool prediction is not the number 1
    assert b.check(True).correct
