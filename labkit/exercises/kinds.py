"""The kinds of exercise (learntools' problem kinds), each a subclass of :class:`Exercise`.

- :class:`Prediction`: a guess recorded before a cell runs, compared with the measured value afterwards.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from labkit.exercises.outcomes import CheckResult, NotYet
from labkit.exercises.problem import Exercise, record

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
            return record(self, CheckResult(False, "make your prediction first with `ex.predict(...)`, before the "
                                                   "measuring cell runs; then check the measured value.",
                                            "not-attempted"))
        return super().check(answer, *more)
