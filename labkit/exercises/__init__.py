"""Checked exercises: ``ex = labkit.exercises.get("00-rank-workload")``, then ``ex.check(answer)``,
``ex.hint()``, ``ex.solution()``.

Introduced in ``notebooks/00_start_here.ipynb``. A checker inspects *properties* of what the learner built
(the ranking is by frequency, the plan has no SORT stage, the document stays under N bytes), never a string
match, and explains what is wrong when the answer is not right.
"""
from __future__ import annotations

import contextvars
import re
from dataclasses import dataclass, field
from typing import Any, Callable


class NotYet(Exception):
    """Raised by a checker with a learner-facing explanation of what is wrong."""


OUTCOMES = ("correct", "incorrect", "error", "not-attempted")


@dataclass(frozen=True)
class CheckResult:
    """What ``Exercise.check`` found: ``correct``, a message for the learner and the ``outcome``.

    ``outcome`` is one of ``OUTCOMES``: "correct", "incorrect" (the checker explains what is wrong), "error"
    (the learner's code raised; the exception is named, never re-raised) or "not-attempted" (no answer yet)."""

    correct: bool
    message: str
    outcome: str = ""

    def __post_init__(self) -> None:
        if not self.outcome:
            object.__setattr__(self, "outcome", "correct" if self.correct else "incorrect")

    def __repr__(self) -> str:
        prefix = {"correct": "Correct! ", "error": "Not yet (an error was raised): ",
                  "not-attempted": "Not attempted yet: "}.get(self.outcome, "Not yet: ")
        return prefix + self.message

    def __bool__(self) -> bool:
        return self.correct


def _not_attempted(answer: Any) -> bool:
    parts = answer if isinstance(answer, tuple) else (answer,)
    return any(p is None or p is Ellipsis for p in parts)


def _raised_in_labkit(exc: BaseException) -> bool:
    """True when no frame of the traceback is the learner's code: a gap in labkit (or the engine) itself.

    The learner's code is anything outside labkit, installed packages and the standard library: a notebook
    cell, a script, a test."""
    import os
    import sys
    import sysconfig

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    libs = {os.path.abspath(p) + os.sep for p in (sysconfig.get_paths().get("stdlib", ""),
                                                   sysconfig.get_paths().get("purelib", ""),
                                                   sysconfig.get_paths().get("platlib", "")) if p}
    tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None  # skip Exercise.check itself
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        path = os.path.abspath(name)
        if not (path.startswith(here) or any(path.startswith(lib) for lib in libs)
                or "site-packages" in path or name.startswith("<frozen")):
            return False
        tb = tb.tb_next
    return True


#: a learner's function called with arguments it does not take (its signature differs from the task's)
_SIGNATURE = re.compile(r"\(\) (takes \d+ positional argument|takes from \d+ to \d+ positional|missing \d+ required"
                        r"|got an unexpected keyword argument|takes no arguments)")


def _answer_shape(exc: BaseException, args: Any) -> str | None:
    """A specific message when the learner's answer has the wrong shape: a function with the wrong parameters,
    a collection passed where the task wants the database, or the other way round."""
    import re

    if not isinstance(exc, TypeError) or not _raised_in_labkit(exc):
        return None
    text = str(exc)
    parts = args if isinstance(args, tuple) else (args,)
    if re.search(r"positional argument|keyword argument|required argument", text):
        funcs = [p for p in parts if callable(p) and not hasattr(p, "find")]
        if funcs:
            import inspect
            try:
                sig = str(inspect.signature(funcs[0]))
            except (TypeError, ValueError):
                sig = "(...)"
            return (f"your function {getattr(funcs[0], '__name__', '?')}{sig} was called with the parameters the "
                    f"task lists and could not take them (TypeError: {text}). Give it exactly the parameters the task "
                    "names, in that order.")
    if "'Collection' object is not callable" in text:
        kinds = [type(p).__name__ for p in parts]
        if any(k.endswith("Collection") for k in kinds):
            return ("a collection was passed where the task asks for the database (e.g. `practice`, not "
                    "`practice.things`); check the call in the task text.")
        if any("Database" in k for k in kinds):
            return ("a database was passed where the task asks for a collection (e.g. `practice.categories`, not "
                    "`practice`); check the call in the task text.")
        return f"the answer has the wrong shape ({', '.join(kinds)}); check the call in the task text."
    return None


def _explain_exception(exc: BaseException, args: Any = None) -> str:
    shape = _answer_shape(exc, args)
    if shape:
        return shape
    text = str(exc).strip() or "(no message)"
    if len(text) > 400:
        text = text[:400] + "..."
    kind = type(exc).__name__
    if isinstance(exc, TypeError) and _SIGNATURE.search(text):
        return (f"{kind}: {text}. Your function was called with the arguments the task names; check how many "
                "parameters it takes, then check again.")
    if _raised_in_labkit(exc):
        return (f"the checker could not check this answer ({kind}: {text}). Check the shape of what you passed "
                "against the task; if it looks right, this is a checker gap worth reporting.")
    return (f"{kind}: {text}. Run your code on its own first (the cell above the check), fix the error, "
            "then check again.")


_REMEMBERED: "contextvars.ContextVar[dict]" = contextvars.ContextVar("labkit_remembered", default={})


def remembered(name: str) -> dict | None:
    """Inside a checker: the setup copy of collection ``name`` kept by ``Exercise.remember`` ({_id: document}),
    or None when the learner's notebook did not keep one."""
    return _REMEMBERED.get().get(name)


@dataclass
class Exercise:
    """One exercise: a checker plus a hint and a solution (shown only when asked for)."""

    id: str
    lesson: str
    task: str
    checker: Callable[[Any], str]
    hints: list[str] = field(default_factory=list)
    solution_text: str = ""
    _hints_shown: int = 0
    _pristine: dict = field(default_factory=dict, repr=False)

    def remember(self, db: Any, *names: str) -> "Exercise":
        """Keep a copy of the setup data (collections ``names`` of ``db``) before the learner changes it, so the
        checker compares the learner's result with the data as it was, not with data the learner may have
        damaged. Returns the exercise, so ``ex = labkit.exercises.get(...).remember(practice, "books")``."""
        import copy
        for name in names:
            self._pristine[name] = {d["_id"]: copy.deepcopy(d) for d in db[name].find()}
        return self

    def check(self, answer: Any, *more: Any) -> CheckResult:
        """Check ``answer`` (some exercises take two things, e.g. ``check(db, pipeline)``).

        Never raises: an exception from the learner's code (or a gap in the checker) comes back as a result
        with outcome "error" naming it. Each check is recorded for ``labkit.progress()``."""
        args = (answer, *more) if more else answer
        if _not_attempted(args):
            result = CheckResult(False, "replace the `None` (or `...`) placeholder with your answer, then check "
                                        "again.", "not-attempted")
        else:
            token = _REMEMBERED.set(self._pristine)
            try:
                praise = self.checker(args)
            except NotYet as exc:
                result = CheckResult(False, str(exc), "incorrect")
            except Exception as exc:  # noqa: BLE001 - a learner gets a message, never a traceback
                result = CheckResult(False, _explain_exception(exc, args), "error")
            else:
                result = CheckResult(True, praise or "that is right.", "correct")
            finally:
                _REMEMBERED.reset(token)
        from labkit import tracking
        tracking.record(self.id, self.lesson, result.outcome)
        return result

    def hint(self) -> str:
        """The next hint (repeats the last one when all were shown)."""
        if not self.hints:
            return "No hint for this one: re-read the cell above the exercise."
        text = self.hints[min(self._hints_shown, len(self.hints) - 1)]
        self._hints_shown += 1
        return text

    def solution(self) -> str:
        """A worked solution (code to copy)."""
        return self.solution_text

    def __repr__(self) -> str:
        return f"Exercise {self.id} ({self.lesson}): {self.task}"


_NOTHING = object()


def _same(predicted: Any, actual: Any, tolerance: float) -> bool:
    """Does a prediction match the measured value? Numbers within ``tolerance`` (relative, at least 0.5
    absolute for whole numbers), strings case- and space-insensitively, everything else by equality."""
    if isinstance(actual, bool) or isinstance(predicted, bool):
        return isinstance(predicted, bool) and isinstance(actual, bool) and predicted == actual
    if isinstance(actual, (int, float)) and isinstance(predicted, (int, float)):
        return abs(predicted - actual) <= max(tolerance * abs(actual), 0.5 if isinstance(actual, int) else 0.0)
    if isinstance(actual, str) and isinstance(predicted, str):
        return " ".join(predicted.split()).casefold() == " ".join(actual.split()).casefold()
    return predicted == actual


@dataclass(repr=False)  # keep Exercise's repr: the generated one would print the solution and the explanation
class Prediction(Exercise):
    """A prediction asked *before* a cell runs, checked against the real result afterwards.

    ``ex.predict(value)`` records the learner's guess; after the measuring cell, ``ex.check(measured)``
    compares the two and explains the measured value with ``explain(measured)``. ``choices`` (optional)
    lists the allowed answers; ``tolerance`` is the relative error accepted for numbers."""

    explain: Callable[[Any], str] | None = None
    choices: tuple = ()
    tolerance: float = 0.0
    _predicted: Any = _NOTHING

    def __post_init__(self) -> None:
        if self.checker is None:
            self.checker = self._check_against

    def __repr__(self) -> str:
        return f"Prediction {self.id} ({self.lesson}): {self.task}"

    def predict(self, value: Any) -> str:
        """Record the prediction (before running the cell that measures it)."""
        if self.choices and not any(_same(value, c, 0.0) for c in self.choices):
            return f"Choose one of {list(self.choices)}; {value!r} is not among them. Nothing recorded."
        self._predicted = value
        return f"Prediction recorded: {value!r}. Now run the cell that measures it, then `ex.check(...)` its result."

    def _check_against(self, measured: Any) -> str:
        if self._predicted is _NOTHING:
            raise NotYet("make your prediction first with `ex.predict(...)`, before the measuring cell runs.")
        if (isinstance(self._predicted, (int, float)) and not isinstance(self._predicted, bool)
                and (not isinstance(measured, (int, float)) or isinstance(measured, bool))):
            raise NotYet(f"check the measured number from the cell above (got {type(measured).__name__} "
                         f"{str(measured)[:60]!r}); e.g. `ex.check(measured)` with the figure that cell printed.")
        why = self.explain(measured) if self.explain else ""
        if _same(self._predicted, measured, self.tolerance):
            return f"you predicted {self._predicted!r} and it is {measured!r}. {why}".strip()
        raise NotYet(f"you predicted {self._predicted!r}, the measurement says {measured!r}. {why}".strip())

    def check(self, answer: Any, *more: Any) -> CheckResult:
        """Compare the recorded prediction with the measured ``answer``."""
        if self._predicted is _NOTHING and answer is not None:
            result = CheckResult(False, "make your prediction first with `ex.predict(...)`, before the measuring "
                                        "cell runs; then check the measured value.", "not-attempted")
            from labkit import tracking
            tracking.record(self.id, self.lesson, result.outcome)
            return result
        return super().check(answer, *more)


_REGISTRY: dict[str, Callable[[], Exercise]] = {}


def register(factory: Callable[[], Exercise]) -> Callable[[], Exercise]:
    """Register an exercise factory under the id of the exercise it builds."""
    _REGISTRY[factory().id] = factory
    return factory


def get(exercise_id: str) -> Exercise:
    """A fresh :class:`Exercise` by id, e.g. ``get("00-rank-workload")``."""
    if exercise_id not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"exercise_id={exercise_id!r} is not an exercise; known ids: {known}")
    return _REGISTRY[exercise_id]()


def ids() -> list[str]:
    """All exercise ids, sorted."""
    return sorted(_REGISTRY)


def _db_and_function(args: Any, name: str, db: str = "db") -> tuple[Any, Callable]:
    """Unpack ``ex.check(db, function)``; explain the call when the learner passed something else."""
    if not (isinstance(args, tuple) and len(args) == 2 and callable(args[1])):
        raise NotYet(f"call it with the database and your function: `ex.check({db}, {name})`.")
    return args


def _stages(plan: dict) -> list[dict]:
    """Every stage of an explain plan tree (classic or SBE ``queryPlan``), depth first."""
    out, todo = [], [plan]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict):
            continue
        if "queryPlan" in node:
            node = node["queryPlan"]
        out.append(node)
        todo += [node[k] for k in ("inputStage", "outerStage", "innerStage") if k in node]
        todo += list(node.get("inputStages", []))
    return out


# Exercise definitions live in one module per part of the curriculum; importing them registers them.
from labkit.exercises import antipatterns, patterns, relationships, scale_out  # noqa: E402,F401
