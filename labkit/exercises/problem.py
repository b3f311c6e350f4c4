"""The base of every exercise (learntools' ``Problem``): a task, hints, a solution and ``check``.

``Exercise.check`` decides no outcome itself: it runs :meth:`Exercise.run` (the call's shape, ``takes``, then
the checker) through :func:`labkit.exercises.outcomes.judge`, where the four outcomes are decided for every
kind, with the setup copy kept by :meth:`Exercise.remember` visible to the checker as :func:`remembered`, then
records the outcome for ``labkit.progress()``. The kinds of exercise (``labkit.exercises.kinds``) are
subclasses that change what :meth:`Exercise.run` gives the checker.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any, Callable

from labkit.exercises.outcomes import CheckResult, judge

_REMEMBERED: "contextvars.ContextVar[dict]" = contextvars.ContextVar("labkit_remembered", default={})


def remembered(name: str) -> dict | None:
    """Inside a checker: the setup copy of collection ``name`` kept by ``Exercise.remember`` ({_id: document}),
    or None when the learner's notebook did not keep one."""
    return _REMEMBERED.get().get(name)


def remembered_names() -> list[str]:
    """Inside a checker: the names of every collection the learner's notebook remembered for this check."""
    return sorted(n for n, docs in _REMEMBERED.get().items() if docs)


def record(exercise: "Exercise", result: CheckResult) -> CheckResult:
    """Record a check's outcome for ``labkit.progress()`` and return the result."""
    from labkit import tracking
    tracking.record(exercise.id, exercise.lesson, result.outcome)
    return result


#: the shape of a call: unpacks the arguments of ``ex.check(...)`` into the checker's parts, or raises NotYet
#: saying how to call it (the factories are in ``labkit.exercises.steps``)
Takes = Callable[[Any], tuple]


@dataclass
class Exercise:
    """One exercise: a checker plus a hint and a solution (shown only when asked for).

    ``checker(*parts)`` returns its praise or raises :class:`NotYet`; ``takes`` unpacks ``ex.check(...)``'s
    arguments into those parts (without it the checker gets the arguments as given: one value, or a tuple)."""

    id: str
    lesson: str
    task: str
    checker: Callable[..., str] | None = None
    hints: list[str] = field(default_factory=list)
    solution_text: str = ""
    takes: Takes | None = None
    _hints_shown: int = field(default=0, init=False)
    _pristine: dict = field(default_factory=dict, repr=False, init=False)

    def parts(self, args: Any) -> tuple:
        """The checker's parts of ``ex.check(...)``'s arguments (``takes``)."""
        return self.takes(args) if self.takes is not None else (args,)

    def run(self, args: Any) -> str:
        """Check ``args``: the praise, or NotYet (an exception of the learner's code propagates)."""
        return self.checker(*self.parts(args))

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
        token = _REMEMBERED.set(self._pristine)
        try:
            result = judge(self.run, args)
        finally:
            _REMEMBERED.reset(token)
        return record(self, result)

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
