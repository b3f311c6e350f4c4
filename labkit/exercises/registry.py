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
