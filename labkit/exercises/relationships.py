"""Where notebooks 00-08 found lesson data before the exercises moved to one module per lesson.

Kept so ``from labkit.exercises.relationships import PRODUCTS_SCHEMA, legacy_products`` (notebook 07) still
works; the data lives in :mod:`labkit.exercises.lessons.l07_validation`.
"""
from __future__ import annotations

from labkit.exercises.lessons.l07_validation import PRODUCTS_SCHEMA, legacy_products

__all__ = ["PRODUCTS_SCHEMA", "legacy_products"]
