"""Checked exercises: ``ex = labkit.exercises.get("00-rank-workload")``, then ``ex.check(answer)``,
``ex.hint()``, ``ex.solution()``.

Introduced in ``notebooks/00_start_here.ipynb``. A checker inspects *properties* of what the learner built
(the ranking is by frequency, the plan has no SORT stage, the document stays under N bytes), never a string
match, and explains what is wrong when the answer is not right.

The map:

- ``lessons/``: one module per lesson, named after its notebook (``lessons/l12_computed.py`` holds the
  exercises of ``notebooks/12_computed.ipynb``); importing the package registers them all.
- ``problem.py``: :class:`Exercise`, the base of every exercise (task, hints, solution, ``check``,
  ``remember``), and :func:`remembered`.
- ``kinds.py``: the kinds of exercise: :class:`Prediction`.
- ``outcomes.py``: :class:`NotYet`, :class:`CheckResult` and the four outcomes (not attempted, not yet with a
  specific message, the learner's own exception named, correct), decided in one place for every kind.
- ``steps.py``: shared steps of the checkers (the shape of a call, the learner's data against the remembered
  setup, a database that crashes between two writes).
- ``observe.py``: command monitoring of the learner's functions (sandboxes, recorded commands, plan figures).
- ``registry.py``: the catalogue (``get``, ``ids``, ``register``), a leaf that progress keeping reads.
"""
from __future__ import annotations

from labkit.exercises import lessons, observe  # noqa: F401 - importing the lessons registers their exercises
from labkit.exercises.kinds import Prediction
from labkit.exercises.outcomes import OUTCOMES, CheckResult, NotYet
from labkit.exercises.problem import Exercise, remembered
from labkit.exercises.registry import get, ids, register

__all__ = ["Exercise", "Prediction", "NotYet", "CheckResult", "OUTCOMES", "remembered", "get", "ids", "register",
           "observe"]
