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
      sources:                 # the MongoDB material the lesson's statements rest on (rendered as the
      - title: "MongoDB manual: Unique indexes"           #   lesson's "Sources" cell, tagged `sources`)
        url: https://www.mongodb.com/docs/manual/core/index-unique/

A source's url must be one of :data:`SOURCE_URL_KINDS` (MongoDB's manual and docs, the server repository at
v8.0, the specifications repository, the developer center, MongoDB University); titles and urls are unique.

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
OPTIONAL_KEYS = ("exercise_minutes", "demo", "mistakes", "sources")
SOLUTION_TAG = "solution"
REVEAL_TAG = "reveal"  # the check of a prediction: code kept, output removed in student copies
NAVIGATION_TAG = "navigation"
SOURCES_TAG = "sources"  # the generated "Sources" cell, just before the navigation cell
#: (kind, url prefix): the places a lesson may cite (see LESSON_CONVENTIONS: MongoDB's own material only)
SOURCE_URL_KINDS = (
    ("MongoDB manual and docs", "https://www.mongodb.com/docs/"),
    ("mongodb/mongo at v8.0 (jstests, src)", "https://github.com/mongodb/mongo/blob/v8.0/"),
    ("mongodb/specifications", "https://github.com/mongodb/specifications/blob/master/"),
    ("MongoDB developer center", "https://www.mongodb.com/developer/"),
    ("MongoDB University", "https://learn.mongodb.com/"),
)


class MetadataError(ValueError):
    """A notebook source has missing or malformed ``labkit`` metadata (the message names file and key)."""


@dataclass(frozen=True)
class Source:
    """One entry of a lesson's ``sources:`` list: a title and the url of MongoDB's page or file."""

    title: str
    url: str


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
    sources: tuple[Source, ...] = ()  # what the lesson cites, in the order given
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


def source_url_kind(url: str) -> str | None:
    """The kind of an allowed source url (see :data:`SOURCE_URL_KINDS`), or None when it is not allowed."""
    for kind, prefix in SOURCE_URL_KINDS:
        if url.startswith(prefix) and len(url) > len(prefix) and not any(c.isspace() or c in "()<>\"'" for c in url):
            return kind
    return None


def _sources(value: object, where: str) -> tuple[Source, ...]:
    """The validated ``sources:`` list (MetadataError names the file and the entry)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise MetadataError(f"{where}: labkit.sources must be a list of {{title, url}} entries, "
                            f"got {type(value).__name__}")
    allowed = ", ".join(prefix + "..." for _, prefix in SOURCE_URL_KINDS)
    result: list[Source] = []
    for i, entry in enumerate(value, 1):
        at = f"{where}: labkit.sources entry {i}"
        if not isinstance(entry, dict):
            raise MetadataError(f"{at} ({entry!r}) must be a mapping with `title:` and `url:`")
        unknown = sorted(set(map(str, entry)) - {"title", "url"})
        if unknown:
            raise MetadataError(f"{at}: unknown key(s) {', '.join(unknown)} (an entry has `title:` and `url:`)")
        title, url = entry.get("title"), entry.get("url")
        if not isinstance(title, str) or not title.strip():
            raise MetadataError(f"{at}: title={title!r} must be a non-empty string")
        at = f"{where}: labkit.sources entry {i} ({title.strip()!r})"
        if not isinstance(url, str) or not url.strip():
            raise MetadataError(f"{at}: url={url!r} must be a non-empty string")
        if source_url_kind(url.strip()) is None:
            raise MetadataError(f"{at}: url {url.strip()!r} is not one of the allowed kinds ({allowed}); cite "
                                "MongoDB's own page or file, never a local path")
        result.append(Source(title.strip(), url.strip()))
    for field in ("title", "url"):
        seen: dict[str, int] = {}
        for i, src in enumerate(result, 1):
            key = getattr(src, field)
            if key in seen:
                raise MetadataError(f"{where}: labkit.sources entries {seen[key]} and {i} have the same {field} "
                                    f"{key!r}")
            seen[key] = i
    return tuple(result)


_READ: dict[tuple, Lesson] = {}  # (path, mtime, size) -> Lesson: jupytext takes ~30 ms a source, and the tests,
# gen_docs and the workshop planner ask for every lesson many times in one process


def read_lesson(source: Path) -> Lesson:
    """Read one ``NN_name.py`` source; :class:`MetadataError` names the file and key when metadata is wrong.

    A source read before and unchanged since (same modification time and size) is not parsed again."""
    source = Path(source)
    try:
        st = source.stat()
        key = (str(source.resolve()), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key in _READ:
        return _READ[key]
    lesson = _read_lesson(source)
    if key is not None:
        _READ[key] = lesson
    return lesson


def _read_lesson(source: Path) -> Lesson:
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
    unknown = sorted(set(map(str, meta)) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        raise MetadataError(f"{where}: unknown labkit key(s) {', '.join(unknown)}; known: "
                            f"{', '.join(REQUIRED_KEYS + OPTIONAL_KEYS)}")
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
        sources=_sources(meta.get("sources"), where),
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


def select(every: list[Path], names: list[str] | None, what: str) -> list[Path]:
    """The paths of ``every`` that ``names`` choose (a name or a prefix of one, in the order named, each once);
    all of them when ``names`` is empty. A name that matches none exits saying ``no {what} matches``."""
    if not names:
        return list(every)
    chosen: list[Path] = []
    for name in names:
        stem = Path(name).stem
        match = [p for p in every if p.stem == stem or p.stem.startswith(stem)]
        if not match:
            raise SystemExit(f"no {what} matches {name!r}")
        chosen += [p for p in match if p not in chosen]
    return chosen


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
