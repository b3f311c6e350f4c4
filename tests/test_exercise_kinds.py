"""The shared problem kinds of labkit.exercises (Prediction, BehaviourCheck, StateCheck, DesignQuestion), the
outcomes every kind inherits, the declared call shapes (steps) and the per-lesson texts (registry.Lesson).

Each test builds its own exercise, so nothing is added to the catalogue the notebooks read."""
from __future__ import annotations

import ast
import json
import tomllib
from pathlib import Path

import pytest
from pymongo.errors import DuplicateKeyError

import labkit.exercises as exercises
from labkit.engine import EmbeddedClient
from labkit.exercises import registry, steps
from labkit.exercises.kinds import BehaviourCheck, DesignQuestion, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.problem import Exercise

LESSONS = Path(exercises.__file__).parent / "lessons"


def _design(checker, takes=None):
    return DesignQuestion(id="xx-design", lesson="xx_test", task="t", checker=checker, takes=takes)


# --- the four outcomes, decided in one place for every kind -----------------------------------------------------


@pytest.mark.parametrize("answer", [None, ..., (None, 1), (1, ...)])
def test_a_placeholder_is_not_attempted_and_the_checker_never_runs(answer):
    ran = []
    result = _design(lambda *a: ran.append(a) or "yes").check(*(answer if isinstance(answer, tuple) else (answer,)))
    assert result.outcome == "not-attempted" and not result.correct and ran == []
    assert "placeholder" in result.message and repr(result).startswith("Not attempted yet: ")


def test_not_yet_is_incorrect_with_the_checkers_own_message():
    def checker(value):
        raise NotYet(f"{value} is too small: sort descending.")
    result = _design(checker).check(3)
    assert (result.outcome, result.message) == ("incorrect", "3 is too small: sort descending.")
    assert repr(result) == "Not yet: 3 is too small: sort descending." and not result


def test_praise_is_correct_and_empty_praise_still_says_so():
    assert _design(lambda v: f"{v} is right.").check(7).message == "7 is right."
    result = _design(lambda v: "").check(7)
    assert result.correct and result.outcome == "correct" and result.message == "that is right."
    assert repr(result) == "Correct! that is right."


def test_the_learners_own_exception_is_named_not_raised():
    def learners(db):  # a function written in a notebook: this file is "the learner's code"
        return 1 / 0
    ex = BehaviourCheck(id="xx-behaviour", lesson="xx_test", task="t",
                        checker=lambda lab, fn: lab.call(fn, None),
                        takes=steps.function("learners"))
    result = ex.check(learners)
    assert result.outcome == "error"
    assert result.message.startswith("ZeroDivisionError: division by zero. Run your code on its own first")


def test_a_gap_in_labkit_is_reported_as_the_checkers_not_the_learners():
    # every frame of the traceback is labkit's: the checker could not check the answer
    result = Exercise(id="xx-gap", lesson="xx_test", task="t", checker=steps.index_keys).check(42)
    assert result.outcome == "error"
    assert result.message.startswith("the checker could not check this answer (AttributeError:")
    assert "checker gap worth reporting" in result.message


def test_a_function_with_other_parameters_than_the_task_names_is_explained():
    def add_line(db):  # the task names add_line(db, order_id, sku, qty, price)
        return None
    # called by a checker of labkit's: the shape of the learner's function is explained
    result = exercises.get("01-order-lines").check(EmbeddedClient()["xx"], add_line)
    assert result.outcome == "error"
    assert result.message.startswith("your function add_line(db) was called with the parameters the task lists")
    # called from code outside labkit: the TypeError is named, with what to check
    ex = BehaviourCheck(id="xx-signature", lesson="xx_test", task="t",
                        checker=lambda lab, db, fn: fn(db, "order:1", "tea", 3, 4.0),
                        takes=steps.db_and_function("add_line"))
    result = ex.check(EmbeddedClient()["xx"], add_line)
    assert result.outcome == "error" and result.message.startswith("TypeError: ")
    assert result.message.endswith("check how many parameters it takes, then check again.")


def test_every_check_is_recorded_for_progress(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_PROGRESS_FILE", str(tmp_path / "p.json"))
    ex = _design(lambda v: "ok")
    ex.check(None)
    ex.check(1)
    entry = json.loads((tmp_path / "p.json").read_text())["exercises"]["xx-design"]
    assert entry["attempts"] == 1 and entry["last_outcome"] == "correct" and entry["passed_at"]


# --- the call's shape (``takes``) ------------------------------------------------------------------------------


@pytest.mark.parametrize("takes, args, said", [
    (steps.db_and_function("reconcile"), (1,), "with the database and your function: `ex.check(db, reconcile)`."),
    (steps.db_and_function("enrol", "practice"), (1, 2), "`ex.check(practice, enrol)`"),
    (steps.function("prune"), ({"a": 1},), "pass your function `prune` itself (no parentheses), not dict."),
    (steps.only_function("add_review"), ((len, len),), "call it with your function only: `ex.check(add_review)`."),
    (steps.only_function("add_review", "ex2"), ([],), "pass your function `add_review` itself, not list."),
    (steps.collection("practice.orders"), (EmbeddedClient()["xx"],), "pass the collection (`practice.orders`), not "),
    (steps.database(), (EmbeddedClient()["xx"]["c"],), "pass the practice database (`practice`), not "),
    (steps.call("call it with both lists: `ex2.check(a, b)`.", None, None), ([],), "call it with both lists"),
    (steps.VALIDATOR, ({},), '`validator` must be a dict such as {"$jsonSchema": {...}}.'),
    (steps.one("call it with your validator only: `ex.check(validator)`.", steps.VALIDATOR), ({"a": 1}, {"b": 2}),
     "call it with your validator only"),
])
def test_a_call_of_the_wrong_shape_says_how_to_call_it(takes, args, said):
    ran = []
    result = _design(lambda *parts: ran.append(parts) or "ok", takes).check(*args)
    assert result.outcome == "incorrect" and said in result.message and ran == []


def test_takes_hands_the_checker_its_parts():
    seen = []
    ex = _design(lambda db, fn: seen.append((db, fn)) or "ok", steps.db_and_function("f"))
    assert ex.check("db", len).correct and seen == [("db", len)]
    assert _design(lambda v: f"got {v}", steps.VALIDATOR).check({"$jsonSchema": {}}).message == \
        "got {'$jsonSchema': {}}"


# --- the kinds ----------------------------------------------------------------------------------------------------


def _prediction(**kw):
    return Prediction(id="xx-predict", lesson="xx_test", task="How many?", explain=lambda n: f"It walks {n}.", **kw)


def test_prediction_outcomes():
    p = _prediction(tolerance=0.1)
    assert p.check(20).outcome == "not-attempted"  # no prediction yet
    assert p.check(None).outcome == "not-attempted"
    p.predict(30)
    wrong = p.check(20)
    assert wrong.outcome == "incorrect" and wrong.message == "you predicted 30, the measurement says 20. It walks 20."
    p.predict(21)
    assert p.check(20).message == "you predicted 21 and it is 20. It walks 20."
    assert p.check("20").outcome == "incorrect"  # a number was predicted: check the measured number
    q = _prediction(choices=("IXSCAN", "COLLSCAN"))
    assert "Nothing recorded" in q.predict("FETCH") and q.check("IXSCAN").outcome == "not-attempted"
    q.predict("ixscan")
    assert q.check("IXSCAN").correct


def test_behaviour_check_runs_the_learners_function_on_fresh_data_and_watches_it():
    def fresh(db):
        db.users.insert_many([{"_id": 1, "n": 0}, {"_id": 2, "n": 0}])

    def checker(lab, db, bump):
        assert isinstance(lab, Lab) and lab.name == "xx-behaviour" and lab.like is db
        with lab.sandbox() as box:
            assert box.db.name == "check_xx_behaviour" and box.recorder.names() == []  # the seeding is not counted
            lab.call(bump, box.db, 1)
            sent = box.recorder.names()
            n = box.db.users.find_one({"_id": 1})["n"]
        if sent != ["update"]:
            raise NotYet(f"one update, not {sent}")
        return f"n is {n}"

    ex = BehaviourCheck(id="xx-behaviour", lesson="xx_test", task="t", checker=checker, fresh=fresh,
                        takes=steps.db_and_function("bump"))
    learners_db = EmbeddedClient()["learner"]
    learners_db.users.insert_one({"_id": 1, "n": 41})  # never used: the sandbox has its own data
    assert ex.check(learners_db, lambda db, i: db.users.update_one({"_id": i}, {"$inc": {"n": 1}})).message == \
        "n is 1"
    read_first = ex.check(learners_db, lambda db, i: (db.users.find_one({"_id": i}),
                                                      db.users.update_one({"_id": i}, {"$set": {"n": 1}})))
    assert read_first.message == "one update, not ['find', 'update']"
    assert learners_db.users.find_one({"_id": 1})["n"] == 41


def test_lab_call_names_a_listed_exception_with_its_own_message():
    def insert_twice(db):
        for _ in range(2):
            db.t.insert_one({"_id": 1})

    def checker(lab, fn):
        with lab.sandbox() as box:
            lab.call(fn, box.db, raises={DuplicateKeyError: lambda exc: f"duplicate ({exc.code}): catch it."})
        return "ok"

    ex = BehaviourCheck(id="xx-raises", lesson="xx_test", task="t", checker=checker, takes=steps.function("f"))
    result = ex.check(insert_twice)
    assert (result.outcome, result.message) == ("incorrect", "duplicate (11000): catch it.")
    assert ex.check(lambda db: db.t.insert_one({"_id": 1})).correct


def test_lab_until_crash_stops_the_learners_function_between_two_writes():
    def two_writes(db):
        db.a.insert_one({"_id": 1})
        db.b.insert_one({"_id": 1})

    def checker(lab, fn):
        with lab.sandbox() as box:
            with lab.until_crash():
                fn(steps.CrashingDb(box.db, 1))
            return f"{box.db.a.count_documents({})} {box.db.b.count_documents({})}"

    ex = BehaviourCheck(id="xx-crash", lesson="xx_test", task="t", checker=checker, takes=steps.function("f"))
    assert ex.check(two_writes).message == "1 0"


def test_lab_sandbox_copies_the_learners_indexes_onto_pristine_data():
    learners = EmbeddedClient()["learner"].posts
    learners.create_index([("authorId", 1), ("at", -1)], unique=True)

    def checker(lab, posts):
        with lab.sandbox(fresh=lambda db: db.posts.insert_one({"_id": 1, "authorId": "a"}),
                         indexes={"posts": posts}) as box:
            keys = steps.index_keys(box.db.posts)
            unique = [i.get("unique") for n, i in box.db.posts.index_information().items() if n != "_id_"]
            return f"{keys} {unique} {box.db.posts.count_documents({})}"

    ex = StateCheck(id="xx-indexes", lesson="xx_test", task="t", checker=checker,
                    takes=steps.collection("posts"))
    assert ex.check(learners).message == "[[('authorId', 1), ('at', -1)]] [True] 1"


def test_state_check_compares_with_the_remembered_setup():
    db = EmbeddedClient()["practice"]
    db.products.insert_many([{"_id": 1, "name": "a"}, {"_id": 2, "name": "b"}])

    def checker(lab, practice):
        setup = lab.setup("products")
        if setup:
            now = {d["_id"]: d for d in practice.products.find()}
            steps.same_ids(setup, now, gone="{n} of {total} gone (e.g. {first!r})", extra="{n} new")
        return f"{sorted(setup)} {lab.setup_names()}"

    ex = StateCheck(id="xx-state", lesson="xx_test", task="t", checker=checker, takes=steps.database())
    assert ex.check(db).message == "[] []"  # nothing remembered: the checker sees an empty setup
    ex.remember(db, "products")
    db.products.delete_one({"_id": 2})
    assert ex.check(db).message == "1 of 2 gone (e.g. 2)"
    db.products.insert_many([{"_id": 2, "name": "b"}, {"_id": 3}])
    assert ex.check(db).message == "1 new"
    db.products.delete_one({"_id": 3})
    assert ex.check(db).message == "[1, 2] ['products']"
    assert exercises.remembered("products") is None  # only inside the check


def test_design_question_gets_the_answer_itself():
    ex = _design(lambda access, rels: f"{len(access)} and {len(rels)}",
                 steps.call("call it with both lists: `ex2.check(access_patterns, relationships)`.", None, None))
    assert ex.check([1, 2], [3]).message == "2 and 1"


def test_fresh_exercises_from_the_catalogue_do_not_share_state():
    first, second = exercises.get("00-predict-page-docs"), exercises.get("00-predict-page-docs")
    first.predict(206)
    assert second.check(206).outcome == "not-attempted"
    hints = exercises.get("00-rank-workload")
    hints.hint()
    assert exercises.get("00-rank-workload").hint() == hints.hints[0]


# --- the lessons: one module and one text file each ----------------------------------------------------------------


def test_each_lesson_module_holds_its_notebooks_exercises_and_every_text_is_used():
    by_lesson: dict[str, set] = {}
    for ex_id in exercises.ids():
        by_lesson.setdefault(exercises.get(ex_id).lesson, set()).add(ex_id)
    modules = sorted(p.stem for p in LESSONS.glob("l*.py"))
    assert modules == sorted(f"l{lesson}" for lesson in by_lesson)
    for module in modules:
        texts = tomllib.loads((LESSONS / f"{module}.toml").read_text(encoding="utf-8"))
        assert set(texts) == by_lesson[module[1:]], module
        assert all(ex_id.startswith(module[1:3] + "-") for ex_id in texts), module
        assert (Path(exercises.__file__).parents[2] / "notebooks" / f"{module[1:]}.ipynb").exists()


def test_lesson_modules_import_no_package_back():
    # a lesson module imports labkit.exercises' modules (observe, steps, kinds...), never the package's names
    # (that would import the package, and so every lesson, back: an import circle)
    submodules = {p.stem for p in LESSONS.parent.glob("*.py")}
    for path in LESSONS.glob("l*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "labkit.exercises":
                assert all(a.name in submodules for a in node.names), (path, [a.name for a in node.names])
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("labkit.exercises.lessons"), path


def test_lesson_texts_and_declarations(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", {})
    module = tmp_path / "l99_test_lesson.py"
    module.write_text("")
    module.with_suffix(".toml").write_text(
        '["99-first"]\ntask = "Do it."\nhints = ["one", "two"]\nsolution = \'\'\'\nf()\nex.check(f)\'\'\'\n\n'
        '["99-guess"]\ntask = "Guess."\nexplain = "{measured:,} keys, from {{a: 1}}."\n')
    lesson = registry.Lesson(str(module))
    assert lesson.name == "99_test_lesson"

    @lesson.exercise(DesignQuestion, "99-first", takes=steps.VALIDATOR)
    def _check(validator):
        return "fine"

    lesson.add(Prediction, "99-guess", tolerance=0.1)
    first, guess = registry.get("99-first"), registry.get("99-guess")
    assert (first.lesson, first.task, first.hints, first.solution()) == ("99_test_lesson", "Do it.", ["one", "two"],
                                                                         "f()\nex.check(f)")
    assert first.check({"$jsonSchema": {}}).correct and registry.ids() == ["99-first", "99-guess"]
    assert guess.explain(12000) == "12,000 keys, from {a: 1}." and guess.solution() == ""
    with pytest.raises(KeyError):
        lesson.add(Prediction, "99-missing")


def test_the_packages_map_lists_every_lesson_module_with_its_exercises_and_kinds():
    import re

    letter = {"BehaviourCheck": "B", "StateCheck": "S", "DesignQuestion": "D", "Prediction": "P"}
    doc = " ".join(exercises.__doc__.split())
    for module in sorted(p.stem for p in LESSONS.glob("l*.py")):
        listed = re.search(rf"- ``{module}``: (.*?)(?= - ``|$)", doc)
        assert listed, module
        want = [f"{i} ({letter[type(exercises.get(i)).__name__]})" for i in exercises.ids()
                if exercises.get(i).lesson == module[1:]]
        assert listed.group(1).split(", ") == want, module
