"""The kinds of exercise (learntools' problem kinds), each a subclass of :class:`Exercise`.

Every kind inherits the outcomes (``labkit.exercises.outcomes``: not attempted, not yet with the checker's
message, the learner's own exception named, correct) and the call's shape (``takes``); a kind decides what
its checker is given:

- :class:`Prediction`: a guess recorded before a cell runs (``ex.predict``), compared with the measured value
  afterwards (``ex.check(measured)``) and explained; no checker of its own.
- :class:`BehaviourCheck`: the learner's function(s), run on fresh data of the checker's own while their
  commands are watched. ``checker(lab, *parts)``: ``lab.sandbox()`` is a private database named after the
  exercise, on the learner's kind of engine, seeded by ``fresh``, with a command recorder.
- :class:`StateCheck`: the database or collection as the learner left it, compared with the setup copy the
  notebook kept (``ex.remember(practice, ...)``, ``lab.setup(name)``) or, for indexes, tried on pristine data
  in a sandbox. ``checker(lab, *parts)``.
- :class:`DesignQuestion`: an answer that is a design decision (a ranking, a pipeline, a validator, a dict of
  choices, the decision helper's inputs), judged against what the checker computes. ``checker(*parts)``.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from labkit.exercises import observe
from labkit.exercises.outcomes import CheckResult, NotYet
from labkit.exercises.problem import Exercise, record, remembered_names
from labkit.exercises.steps import setup_of

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
    _predicted: Any = field(default=_NOTHING, init=False)

    def __repr__(self) -> str:
        return f"Prediction {self.id} ({self.lesson}): {self.task}"

    def predict(self, value: Any) -> str:
        """Record the prediction (before running the cell that measures it)."""
        if self.choices and not any(_same(value, c, 0.0) for c in self.choices):
            return f"Choose one of {list(self.choices)}; {value!r} is not among them. Nothing recorded."
        self._predicted = value
        return f"Prediction recorded: {value!r}. Now run the cell that measures it, then `ex.check(...)` its result."

    def run(self, measured: Any) -> str:
        """Compare the recorded prediction with the measured value (the checker of every prediction)."""
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


class Lab:
    """What a behaviour or state checker works with: sandboxes of its own, the learner's calls, the setup copy.

    ``name`` names the sandboxes (the exercise's id), ``like`` is the learner's database or collection (the
    sandbox is on the same kind of engine: embedded, or a fresh labkit database on the learner's server) and
    ``fresh`` seeds every sandbox with the checker's own data."""

    def __init__(self, name: str, like: Any = None, fresh: Callable[[Any], Any] | None = None) -> None:
        self.name, self.like, self.fresh = name, like, fresh

    def sandbox(self, like: Any = _NOTHING, *, fresh: Callable[[Any], Any] | None | object = _NOTHING,
                indexes: dict[str, Any] | None = None, name: str | None = None) -> observe.Sandbox:
        """A pristine database for one step of the check (a context manager), seeded by ``fresh`` (the
        exercise's, unless given here), then given the learner's indexes: ``indexes`` maps a sandbox collection
        to the learner's collection whose index definitions (keys and options) it copies. The recorder is
        cleared after that set-up, so it holds only what the learner's code sends."""
        box = observe.sandbox(name or self.name, self.like if like is _NOTHING else like)
        seed = self.fresh if fresh is _NOTHING else fresh
        try:
            if seed is not None:
                seed(box.db)
            for target, learners in (indexes or {}).items():
                observe.copy_indexes(learners, box.db[target])
        except BaseException:
            box.close()
            raise
        if seed is not None or indexes:
            box.recorder.clear()
        return box

    @staticmethod
    def call(fn: Callable, *args: Any, raises: dict[type, str | Callable[[Any], str]] | None = None) -> Any:
        """Run the learner's function. An exception listed in ``raises`` becomes NotYet with its message (a str,
        or a function of the exception): the learner's own exception named, with what to do about it. Any
        other exception propagates (the outcome "error" names it)."""
        try:
            return fn(*args)
        except tuple(raises or ()) as exc:
            why = next(v for k, v in raises.items() if isinstance(exc, k))
            raise NotYet(why(exc) if callable(why) else why) from None

    interleaved = staticmethod(observe.interleaved)

    @staticmethod
    @contextlib.contextmanager
    def until_crash() -> Iterator[None]:
        """Run a learner's function that was given a crashing database (``steps.CrashingDb``): the simulated
        crash ends the block quietly, like a process that died."""
        from labkit.exercises.steps import SimulatedCrash
        with contextlib.suppress(SimulatedCrash):
            yield

    @staticmethod
    def setup(name: str) -> dict:
        """The setup copy of collection ``name`` kept by ``ex.remember`` ({_id: document}); {} without one."""
        return setup_of(name)

    @staticmethod
    def setup_names() -> list[str]:
        """The collections the learner's notebook remembered for this check."""
        return remembered_names()


def _learner_db(parts: tuple) -> Any:
    """The first part that is a database, collection or client (the learner's engine), or None."""
    return next((p for p in parts if observe.client_of(p) is not None), None)


@dataclass(repr=False)
class BehaviourCheck(Exercise):
    """The learner's function(s) run on fresh data of the checker's own while their commands are watched.

    ``checker(lab, *parts)``; ``fresh`` seeds each ``lab.sandbox()``; ``sandbox_name`` names the sandboxes
    (the exercise's id by default)."""

    fresh: Callable[[Any], Any] | None = None
    sandbox_name: str = ""

    def run(self, args: Any) -> str:
        parts = self.parts(args)
        return self.checker(Lab(self.sandbox_name or self.id, _learner_db(parts), self.fresh), *parts)


@dataclass(repr=False)
class StateCheck(Exercise):
    """The database or collection as the learner left it, compared with the remembered setup
    (``lab.setup(name)``) or, for indexes, tried on pristine data (``lab.sandbox()``). ``checker(lab, *parts)``."""

    def run(self, args: Any) -> str:
        parts = self.parts(args)
        return self.checker(Lab(self.id, _learner_db(parts)), *parts)


@dataclass(repr=False)
class DesignQuestion(Exercise):
    """An answer that is a design decision (a ranking, a pipeline, a validator, a dict of choices, the decision
    helper's inputs), judged against what the checker computes from the task. ``checker(*parts)``."""
