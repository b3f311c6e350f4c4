"""Exercises of the patterns lessons."""
from __future__ import annotations

from typing import Any

from labkit.exercises import Exercise, NotYet, _stages, register  # noqa: F401
