"""Where notebooks 30-39 found lesson data before the exercises moved to one module per lesson.

Kept so ``from labkit.exercises.antipatterns import blog_store`` (notebook 39) still works; the store lives in
:mod:`labkit.exercises.lessons.l39_schema_review`.
"""
from __future__ import annotations

from labkit.exercises.lessons.l39_schema_review import blog_store

__all__ = ["blog_store"]
