"""Read Schema Lab's lesson metadata from the notebook sources (the one reader every generator shares).

Each lesson is a jupytext py:percent source ``notebooks/src/NN_name.py`` (paired with ``notebooks/NN_name.ipynb``)
whose YAML header holds::

    labkit:
      minutes: 15              # required: self-paced time shown to learners
      title: Start here        # required
      section: Introduction    # required: lessons of one section are listed together
      exercise_minutes: 5      # optional: extra workshop time for the exercises (default 5 when the lesson
                               #   has a cell tagged `solution`, else 0; never less than 3 per prediction
                               #   and 6 per build task among the labkit exercises the lesson uses)
      demo: "..."              # optional: what the instructor demonstrates live
      mistakes: ["...", ...]   # optional: common learner mistakes

Usage::

    from tools.notebook_meta import lessons
    for lesson in lessons():          # in lesson-number order
        print(lesson.number, lesson.title, lesson.minutes)
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOURCE_DIR = "src"  # jupytext pairs notebooks/NN.ipynb with notebooks/src/NN.py ("ipynb,src//py:percent")
SOURCE_GLOB = "[0-9][0-9]_*.py"
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
DEFAULT_EXERCISE_MINUTES = 5
# Room minutes per exercise, a planning rule of thumb: a prediction is read, guessed and discussed after the
# measuring cell in about 3 minutes; a build task (read the statement, write a few lines of pymongo, run the
# check, fix once) takes about 6. A lesson's exercise minutes are at least the sum over its exercises.
PREDICTION_MINUTES = 3
TASK_MINUTES = 6
EXERCISE_GET = re.compile(r"""labkit\.exercises\.get\(\s*["']([^"']+)["']""")
REQUIRED_KEYS = ("minutes", "title", "section")
OPTIONAL_KEYS = ("exercise_minutes", "demo", "mistakes")
SOLUTION_TAG = "solution"
REVEAL_TAG = "reveal"  # the check of a prediction: code kept, output removed in student copies
NAVIGATION_TAG = "navigation"


class MetadataError(ValueError):
    """A notebook source has missing or malformed ``labkit`` metadata (the message names file and key)."""


@dataclass(frozen=True)
class Lesson:
    """One lesson's metadata, read from ``notebooks/src/NN_name.py``."""

    name: str                 # file stem, e.g. "00_start_here"
    number: str               # "00"
    title: str
    section: str
    minutes: int              # self-paced minutes (teaching)
    exercise_minutes: int     # extra workshop minutes for the exercise
    demo: str                 # "" when not given
    mistakes: tuple[str, ...]
    has_exercise: bool        # a cell is tagged `solution`
    source: Path              # the .py file
    predictions: int = 0      # labkit.exercises the lesson uses that are predictions
    tasks: int = 0            # ... and the other exercises (build tasks)

    @property
    def ipynb(self) -> Path:
        """The paired notebook (may not exist yet)."""
        return self.source.parent.parent / (self.source.stem + ".ipynb")

    @property
    def slot_minutes(self) -> int:
        """Workshop time: teaching minutes plus exercise minutes."""
        return self.minutes + self.exercise_minutes


def _whole_minutes(value: object, where: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != int(value):
        raise MetadataError(f"{where}: labkit.{key}={value!r} must be a whole number of minutes >= 0")
    return int(value)


def read_lesson(source: Path) -> Lesson:
    """Read one ``NN_name.py`` source; :class:`MetadataError` names the file and key when metadata is wrong."""
    source = Path(source)
    where = str(source.relative_to(ROOT)) if source.is_relative_to(ROOT) else str(source)
    m = re.match(r"^(\d\d)_\w+$", source.stem)
    if not m:
        raise MetadataError(f"{where}: notebook sources are named NN_name.py (two digits, underscore, name)")
    nb = jupytext.read(source)
    meta = nb.metadata.get("labkit")
    if not isinstance(meta, dict):
        raise MetadataError(f"{where}: the YAML header has no `labkit:` mapping (needs {', '.join(REQUIRED_KEYS)})")
    missing = [k for k in REQUIRED_KEYS if k not in meta]
    if missing:
        raise MetadataError(f"{where}: labkit metadata is missing {', '.join(missing)}")
    for key in ("title", "section"):
        if not isinstance(meta[key], str) or not meta[key].strip():
            raise MetadataError(f"{where}: labkit.{key}={meta[key]!r} must be a non-empty string")
    has_exercise = any(SOLUTION_TAG in c.metadata.get("tags", []) for c in nb.cells)
    predictions, tasks = exercise_kinds(nb)
    ex_default = DEFAULT_EXERCISE_MINUTES if has_exercise else 0
    demo = meta.get("demo") or ""
    if not isinstance(demo, str):
        raise MetadataError(f"{where}: labkit.demo must be a string, got {type(demo).__name__}")
    mistakes = meta.get("mistakes") or []
    if isinstance(mistakes, str) or not all(isinstance(x, str) for x in mistakes):
        raise MetadataError(f"{where}: labkit.mistakes must be a list of strings")
    return Lesson(
        name=source.stem,
        number=m.group(1),
        title=meta["title"].strip(),
        section=meta["section"].strip(),
        minutes=_whole_minutes(meta["minutes"], where, "minutes"),
        exercise_minutes=max(_whole_minutes(meta.get("exercise_minutes", ex_default), where, "exercise_minutes"),
                             PREDICTION_MINUTES * predictions + TASK_MINUTES * tasks),
        demo=demo.strip(),
        mistakes=tuple(x.strip() for x in mistakes),
        has_exercise=has_exercise,
        source=source,
        predictions=predictions,
        tasks=tasks,
    )


def exercise_kinds(nb: object) -> tuple[int, int]:
    """(predictions, build tasks) among the labkit exercises a lesson's code cells get; an id labkit does not
    know (or no labkit to ask) counts as a build task."""
    ids = []
    for cell in getattr(nb, "cells", []):
        if cell.cell_type == "code":
            ids += [i for i in EXERCISE_GET.findall(cell.source) if i not in ids]
    try:
        import sys

        if str(ROOT) not in sys.path:
            sys.path.append(str(ROOT))
        from labkit import exercises
    except ImportError:
        return 0, len(ids)
    known = set(exercises.ids())
    predictions = sum(1 for i in ids if i in known and isinstance(exercises.get(i), exercises.Prediction))
    return predictions, len(ids) - predictions


def sources(notebooks: Path = NOTEBOOKS) -> list[Path]:
    """All lesson sources ``src/NN_*.py`` of ``notebooks`` in lesson order."""
    return sorted((Path(notebooks) / SOURCE_DIR).glob(SOURCE_GLOB))


def lessons(notebooks: Path = NOTEBOOKS) -> list[Lesson]:
    """Every lesson in ``notebooks`` in lesson-number order; duplicate numbers are an error."""
    result = [read_lesson(p) for p in sources(notebooks)]
    seen: dict[str, str] = {}
    for lesson in result:
        if lesson.number in seen:
            raise MetadataError(f"lessons {seen[lesson.number]} and {lesson.name} share the number {lesson.number}")
        seen[lesson.number] = lesson.name
    return result


def sections(all_lessons: list[Lesson]) -> list[tuple[str, list[Lesson]]]:
    """Lessons grouped by section; sections ordered by their lowest lesson number."""
    groups: dict[str, list[Lesson]] = {}
    for lesson in sorted(all_lessons, key=lambda x: x.number):
        groups.setdefault(lesson.section, []).append(lesson)
    return list(groups.items())
