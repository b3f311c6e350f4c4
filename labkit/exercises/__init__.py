"""Checked exercises: ``ex = labkit.exercises.get("00-rank-workload")``, then ``ex.check(answer)``,
``ex.hint()``, ``ex.solution()``.

Introduced in ``notebooks/00_start_here.ipynb``. A checker inspects *properties* of what the learner built
(the ranking is by frequency, the plan has no SORT stage, the document stays under N bytes), never a string
match, and explains what is wrong when the answer is not right.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


class NotYet(Exception):
    """Raised by a checker with a learner-facing explanation of what is wrong."""


@dataclass(frozen=True)
class CheckResult:
    """What ``Exercise.check`` found: ``correct`` and a message for the learner."""

    correct: bool
    message: str

    def __repr__(self) -> str:
        return ("Correct! " if self.correct else "Not yet: ") + self.message

    def __bool__(self) -> bool:
        return self.correct


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

    def check(self, answer: Any, *more: Any) -> CheckResult:
        """Check ``answer`` (some exercises take two things, e.g. ``check(db, pipeline)``)."""
        try:
            praise = self.checker((answer, *more) if more else answer)
        except NotYet as exc:
            return CheckResult(False, str(exc))
        return CheckResult(True, praise or "that is right.")

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
from labkit.exercises import antipatterns, patterns, relationships  # noqa: E402,F401
