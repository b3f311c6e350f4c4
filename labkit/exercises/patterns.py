"""Where notebooks 10-20 found lesson data before the exercises moved to one module per lesson.

Kept so ``from labkit.exercises.patterns import WHICH_PATTERN_SCENARIOS`` (notebook 20) still works; the quiz
lives in :mod:`labkit.exercises.lessons.l20_which_pattern`.
"""
from __future__ import annotations

from labkit.exercises.lessons.l20_which_pattern import WHICH_PATTERN_SCENARIOS

__all__ = ["WHICH_PATTERN_SCENARIOS"]
