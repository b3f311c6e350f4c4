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

    def check(self, answer: Any) -> CheckResult:
        """Check ``answer``; the result says what is right or what is wrong."""
        try:
            praise = self.checker(answer)
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


# --- notebook 00 -------------------------------------------------------------------------------------------

def _check_rank_workload(answer: Any) -> str:
    import pandas as pd

    if not isinstance(answer, pd.DataFrame):
        raise NotYet(f"expected a pandas DataFrame (the workload table, re-ordered), got {type(answer).__name__}.")
    needed = {"operation", "per_second"}
    missing = needed - set(answer.columns)
    if missing:
        raise NotYet(f"the table lost column(s) {sorted(missing)}; keep every column of `workload`.")
    if len(answer) != 7 or answer["operation"].nunique() != 7:
        raise NotYet(f"the table should still have all 7 operations; it has {answer['operation'].nunique()}.")
    freq = list(answer["per_second"])
    if freq == sorted(freq):
        raise NotYet("it is sorted, but least frequent first: the operations to design for should come first "
                     "(ascending=False).")
    if freq != sorted(freq, reverse=True):
        raise NotYet("the rows are not ordered by `per_second`; sort by that column, most frequent first.")
    top = answer.iloc[0]["operation"]
    return f"'{top}' runs most often, so the product document is shaped around it."


@register
def _ex00() -> Exercise:
    return Exercise(
        id="00-rank-workload",
        lesson="00_start_here",
        task="Rank the online store's operations by how often they run, most frequent first.",
        checker=_check_rank_workload,
        hints=["DataFrames have a `sort_values` method.",
               "`workload.sort_values(\"per_second\", ascending=False)`"],
        solution_text='ranked = workload.sort_values("per_second", ascending=False)\nex.check(ranked)',
    )
