"""The outcomes of a check, decided in one place for every kind of exercise.

A check ends in one of four outcomes (``OUTCOMES``):

- "not-attempted": the answer still holds the notebook's placeholder (``None`` or ``...``);
- "incorrect": the checker raised :class:`NotYet` with a message specific to the mistake;
- "error": something else was raised; the message names the learner's own exception (and says what to do), or
  says it is a gap in labkit when no frame of the traceback is the learner's code; never a traceback;
- "correct": the checker returned its praise.

:func:`judge` runs a checker and turns what it did into a :class:`CheckResult`; checkers never catch exceptions
only to re-word them generically.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable


class NotYet(Exception):
    """Raised by a checker with a learner-facing explanation of what is wrong."""


OUTCOMES = ("correct", "incorrect", "error", "not-attempted")

NOT_ATTEMPTED = "replace the `None` (or `...`) placeholder with your answer, then check again."


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


def not_attempted(answer: Any) -> bool:
    """Does the answer (or any part of a tuple of answers) still hold the placeholder ``None`` / ``...``?"""
    parts = answer if isinstance(answer, tuple) else (answer,)
    return any(p is None or p is Ellipsis for p in parts)


def judge(checker: Callable[[Any], str], args: Any) -> CheckResult:
    """Run ``checker(args)`` and decide the outcome (see the module's docstring). Never raises."""
    if not_attempted(args):
        return CheckResult(False, NOT_ATTEMPTED, "not-attempted")
    try:
        praise = checker(args)
    except NotYet as exc:
        return CheckResult(False, str(exc), "incorrect")
    except Exception as exc:  # noqa: BLE001 - a learner gets a message, never a traceback
        return CheckResult(False, explain_exception(exc, args), "error")
    return CheckResult(True, praise or "that is right.", "correct")


def raised_in_labkit(exc: BaseException) -> bool:
    """True when no frame of the traceback is the learner's code: a gap in labkit (or the engine) itself.

    The learner's code is anything outside labkit, installed packages and the standard library: a notebook
    cell, a script, a test."""
    import os
    import sysconfig

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    libs = {os.path.abspath(p) + os.sep for p in (sysconfig.get_paths().get("stdlib", ""),
                                                   sysconfig.get_paths().get("purelib", ""),
                                                   sysconfig.get_paths().get("platlib", "")) if p}
    tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None  # skip judge() itself
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


def answer_shape(exc: BaseException, args: Any) -> str | None:
    """A specific message when the learner's answer has the wrong shape: a function with the wrong parameters,
    a collection passed where the task wants the database, or the other way round."""
    if not isinstance(exc, TypeError) or not raised_in_labkit(exc):
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


def explain_exception(exc: BaseException, args: Any = None) -> str:
    """The learner-facing message for an exception a check raised (never a traceback)."""
    shape = answer_shape(exc, args)
    if shape:
        return shape
    text = str(exc).strip() or "(no message)"
    if len(text) > 400:
        text = text[:400] + "..."
    kind = type(exc).__name__
    if isinstance(exc, TypeError) and _SIGNATURE.search(text):
        return (f"{kind}: {text}. Your function was called with the arguments the task names; check how many "
                "parameters it takes, then check again.")
    if raised_in_labkit(exc):
        return (f"the checker could not check this answer ({kind}: {text}). Check the shape of what you passed "
                "against the task; if it looks right, this is a checker gap worth reporting.")
    return (f"{kind}: {text}. Run your code on its own first (the cell above the check), fix the error, "
            "then check again.")
