"""The catalogue of exercises: id -> a factory of a fresh exercise.

A leaf module (it imports nothing of labkit), so progress keeping (``labkit.tracking``) can list the exercises
without importing the checkers' package back. Importing ``labkit.exercises`` fills it: each lesson module
registers its exercises when it is imported.
"""
from __future__ import annotations

from typing import Any, Callable

_REGISTRY: dict[str, Callable[[], Any]] = {}


def register(factory: Callable[[], Any]) -> Callable[[], Any]:
    """Register an exercise factory under the id of the exercise it builds."""
    _REGISTRY[factory().id] = factory
    return factory


def get(exercise_id: str) -> Any:
    """A fresh :class:`~labkit.exercises.problem.Exercise` by id, e.g. ``get("00-rank-workload")``."""
    if exercise_id not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"exercise_id={exercise_id!r} is not an exercise; known ids: {known}")
    return _REGISTRY[exercise_id]()


def ids() -> list[str]:
    """All exercise ids, sorted."""
    return sorted(_REGISTRY)


class Lesson:
    """One lesson's exercises: what the learner reads of each (task, hints, solution, a prediction's
    explanation) comes from the TOML file beside the lesson's module (``lessons/l12_computed.toml`` for
    ``lessons/l12_computed.py``); the module declares each exercise's kind and checker with :meth:`add`."""

    def __init__(self, module_file: str) -> None:
        import tomllib
        from pathlib import Path

        path = Path(module_file)
        self.name = path.stem[1:]  # "l12_computed" -> "12_computed", the notebook's name
        self.texts: dict[str, dict[str, Any]] = tomllib.loads(path.with_suffix(".toml").read_text(encoding="utf-8"))
        self.ids: list[str] = []

    def add(self, kind: Callable[..., Any], exercise_id: str, **fields: Any) -> None:
        """Register exercise ``exercise_id`` of this lesson: ``kind(...)`` with its texts and ``fields``
        (a field given here, e.g. a task computed from the lesson's data, wins over the text)."""
        text = self.texts[exercise_id]
        given: dict[str, Any] = {"hints": text.get("hints", []), "solution_text": text.get("solution", "")}
        if "task" in text:
            given["task"] = text["task"]
        if "explain" in text:
            given["explain"] = _explanation(text["explain"])
        given.update(fields)
        if "task" not in given:
            raise KeyError(f"exercise {exercise_id!r} has no task in the texts of lesson {self.name}")

        def build() -> Any:
            return kind(id=exercise_id, lesson=self.name, **dict(given, hints=list(given["hints"])))
        register(build)
        self.ids.append(exercise_id)

    def exercise(self, kind: Callable[..., Any], exercise_id: str, **fields: Any) -> Callable[[Callable], Callable]:
        """Decorator: the function below is the checker of exercise ``exercise_id``, of ``kind`` (see :meth:`add`)."""
        def declare(checker: Callable) -> Callable:
            self.add(kind, exercise_id, checker=checker, **fields)
            return checker
        return declare


def _explanation(template: str) -> Callable[[Any], str]:
    """A prediction's ``explain``: the template formatted with the measured value (``{measured}``)."""
    def explain(measured: Any) -> str:
        return template.format(measured=measured)
    return explain
