#!/usr/bin/env python3
"""Generate Schema Lab's navigation and course documents from the notebooks' ``labkit`` metadata.

    python3 tools/gen_docs.py           # (re)write everything below
    python3 tools/gen_docs.py --check   # write nothing; list stale files, exit 1 if any

What it writes (all derived; never edit by hand):

- ``CONTENTS.md``: lessons per section with number, title, minutes, link, and minutes per section;
- a final markdown cell tagged ``navigation`` ("← previous · contents · next →") in every
  ``notebooks/src/NN_*.py``, and the same cell in the paired ``.ipynb`` when it exists (a markdown cell has no
  outputs, so no re-execution is needed; ``python3 dev.py build-notebooks`` carries it over as well);
- just before it, a markdown cell tagged ``sources`` ("## Sources", a numbered list of the linked titles of
  the lesson's ``labkit.sources``), in the .py and the .ipynb alike (none when the lesson lists no sources);
- ``students/NN_name.ipynb``: each built notebook with every cell tagged ``solution`` replaced by an empty
  code cell ``# Your answer here`` (tags kept, outputs of those cells dropped), plus ``students/README.md``;
- ``INSTRUCTOR.md``: workshop agendas (taster, half day, full day, anti-pattern half and full day, two-day
  course), the measured cluster footprint, a workshop walked through end to end, the live-demo presenter
  script, what to demo live, common mistakes per lesson, and how to run on a shared cluster.

``tests/test_docs_fresh.py`` regenerates all of this in memory and fails when a file on disk differs.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
_VENV_PY = _HERE.parent / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
try:
    import jupytext  # noqa: F401
    import nbformat
except ImportError:  # run with a Python that lacks the dev dependencies: use the project's .venv instead
    if __name__ == "__main__" and _VENV_PY.exists() and Path(sys.prefix).resolve() != _VENV_PY.parents[1].resolve():
        os.execv(str(_VENV_PY), [str(_VENV_PY), __file__, *sys.argv[1:]])
    raise

sys.path.insert(0, str(_HERE))
from notebook_meta import (NAVIGATION_TAG, PREDICTION_MINUTES, REVEAL_TAG, ROOT, SOLUTION_TAG,  # noqa: E402
                           SOURCES_TAG, TASK_MINUTES, Lesson, lessons, sections)

REGENERATE = "python3 tools/gen_docs.py"
GENERATED_NOTE = f"<!-- Generated from the notebooks' `labkit` metadata by `{REGENERATE}`. Do not edit by hand. -->"
STUDENT_PLACEHOLDER = "# Your answer here"
CELL_MARKER = re.compile(r"^# %%")
NAV_MARKER = re.compile(r"^# %%.*\btags=\[[^\]]*[\"'](?:" + NAVIGATION_TAG + "|" + SOURCES_TAG + r")[\"']")
TAIL_TAGS = (SOURCES_TAG, NAVIGATION_TAG)  # the generated cells at the end of a lesson, in this order


# --- small helpers -----------------------------------------------------------------------------------------

def fmt_minutes(minutes: int) -> str:
    """``75`` -> ``"1 h 15 min"``; ``40`` -> ``"40 min"``."""
    hours, rest = divmod(int(minutes), 60)
    if not hours:
        return f"{rest} min"
    return f"{hours} h" + (f" {rest} min" if rest else "")


def fmt_clock(minutes: int) -> str:
    """Offset from the start of a session: ``75`` -> ``"1:15"``."""
    return f"{minutes // 60}:{minutes % 60:02d}"


def _md(text: str) -> str:
    """Escape ``$`` outside code spans, so two of them on one line never render as math (Jupyter, GitHub)."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("$", "\\$") for i, p in enumerate(parts))


def _cell(text: str) -> str:
    """Escape text for a markdown table cell."""
    return _md(text).replace("|", "\\|").replace("\n", " ")


def _label(lesson: Lesson) -> str:
    return f"{lesson.number} · {_md(lesson.title)}"


# --- CONTENTS.md -------------------------------------------------------------------------------------------

def render_contents(all_lessons: list[Lesson]) -> str:
    """The contents page: a section summary, then one table per section with links to the notebooks.

    Times are the lesson's reading and running time plus its exercises, so a self-paced learner can plan."""
    total = sum(x.slot_minutes for x in all_lessons)
    teach = sum(x.minutes for x in all_lessons)
    groups = sections(all_lessons)
    out = [
        "# Schema Lab: contents", "", GENERATED_NOTE, "",
        f"{len(all_lessons)} lesson{'s' if len(all_lessons) != 1 else ''}, about {fmt_minutes(total)} in total "
        f"when worked through alone ({fmt_minutes(teach)} of lessons and {fmt_minutes(total - teach)} of "
        "exercises). Open them with `python3 dev.py lab`.", "",
        "**Learners:** follow the lesson links. They open the copies in [students/](students/README.md), where "
        "every exercise is waiting for your answer (`ex.hint()` gives a hint, `ex.solution()` shows a worked "
        "answer when you want to peek). Each lesson ends with links to the previous lesson, these contents and "
        "the next lesson.", "",
        "**Instructors:** the last column links the complete copies in [notebooks/](notebooks/README.md), with "
        "every answer typed in and run; workshop agendas are in [INSTRUCTOR.md](INSTRUCTOR.md).", "",
        "| Section | Lessons | Lesson min | Exercise min | Total min |", "|---|---:|---:|---:|---:|",
    ]
    for section, items in groups:
        anchor = re.sub(r"[^a-z0-9 -]", "", section.lower()).replace(" ", "-")
        out.append(f"| [{_cell(section)}](#{anchor}) | {len(items)} | {sum(x.minutes for x in items)} | "
                   f"{sum(x.exercise_minutes for x in items)} | {sum(x.slot_minutes for x in items)} |")
    out.append(f"| **Total** | **{len(all_lessons)}** | **{teach}** | **{total - teach}** | **{total}** |")
    for section, items in groups:
        minutes = sum(x.slot_minutes for x in items)
        out += ["", f"## {_md(section)}", "", f"{len(items)} lesson{'s' if len(items) != 1 else ''}, {fmt_minutes(minutes)}.",
                "", "| # | Lesson | Lesson min | Exercise min | Total min | With answers (instructors) |",
                "|---|---|---:|---:|---:|---|"]
        for x in items:
            out.append(f"| {x.number} | [{_cell(x.title)}](students/{x.name}.ipynb) | {x.minutes} | "
                       f"{x.exercise_minutes} | {x.slot_minutes} | [{x.number} with answers](notebooks/{x.name}.ipynb) |")
        out.append(f"| | **{_cell(section)} total** | **{sum(x.minutes for x in items)}** | "
                   f"**{sum(x.exercise_minutes for x in items)}** | **{minutes}** | |")
    return "\n".join(out) + "\n"


# --- navigation cells --------------------------------------------------------------------------------------

def navigation_markdown(all_lessons: list[Lesson], index: int) -> str:
    """The navigation cell's markdown for ``all_lessons[index]`` (links relative to ``notebooks/``)."""
    parts = []
    if index > 0:
        prev = all_lessons[index - 1]
        parts.append(f"[← {_label(prev)}]({prev.name}.ipynb)")
    parts.append("[Contents](../CONTENTS.md)")
    if index + 1 < len(all_lessons):
        nxt = all_lessons[index + 1]
        parts.append(f"[{_label(nxt)} →]({nxt.name}.ipynb)")
    return " · ".join(parts)


def _link_text(text: str) -> str:
    """Escape text for a markdown link's text: ``$`` (math) and square brackets."""
    return _md(text).replace("[", "\\[").replace("]", "\\]")


def sources_markdown(lesson: Lesson) -> str:
    """The sources cell's markdown for ``lesson``: "## Sources" and a numbered list of linked titles ("" when
    the lesson lists none)."""
    if not lesson.sources:
        return ""
    items = [f"{i}. [{_link_text(src.title)}]({src.url})" for i, src in enumerate(lesson.sources, 1)]
    return "\n".join(["## Sources", "", *items])


def _tail(nav: str, sources: str) -> list[tuple[str, str]]:
    """(tag, markdown) of the generated cells that end a lesson: sources (when any), then navigation."""
    return [(tag, md) for tag, md in zip(TAIL_TAGS, (sources, nav)) if md]


def py_with_navigation(text: str, nav: str, sources: str = "") -> str:
    """py:percent source ``text`` with its ``sources`` and ``navigation`` cells removed, then ``sources`` (when
    not empty) and ``nav`` appended as the last cells."""
    lines = text.splitlines()
    kept: list[str] = []
    skipping = False
    for line in lines:
        if CELL_MARKER.match(line):
            skipping = bool(NAV_MARKER.match(line))
        if not skipping:
            kept.append(line)
    out = "\n".join(kept).rstrip("\n")
    for tag, md in _tail(nav, sources):
        commented = "\n".join(f"# {ln}" if ln else "#" for ln in md.splitlines())
        out += f'\n\n# %% [markdown] tags=["{tag}"]\n{commented}'
    return out + "\n"


def ipynb_with_navigation(text: str, nav: str, sources: str = "") -> str:
    """Notebook JSON ``text`` ending with the ``sources`` markdown (when not empty) and the ``navigation``
    markdown ``nav``, each in a cell tagged so.

    Returns ``text`` unchanged when that is already so, to keep the stored file byte-identical."""
    nb = nbformat.reads(text, as_version=4)
    want = _tail(nav, sources)

    def tag_of(cell: Any) -> str | None:
        tags = cell.get("metadata", {}).get("tags", [])
        return next((t for t in TAIL_TAGS if t in tags), None)

    tagged = [tag_of(c) for c in nb.cells]
    end = nb.cells[len(nb.cells) - len(want):] if len(nb.cells) >= len(want) else []
    if sum(t is not None for t in tagged) == len(want) and len(end) == len(want) and all(
            c.cell_type == "markdown" and tag_of(c) == tag and c.source == md for c, (tag, md) in zip(end, want)):
        return text
    old = {t: c for c, t in zip(nb.cells, tagged) if t is not None}
    nb.cells = [c for c, t in zip(nb.cells, tagged) if t is None]
    for tag, md in want:
        cell = nbformat.v4.new_markdown_cell(md, metadata={"tags": [tag]})
        if nb.nbformat_minor >= 5:
            cell["id"] = old[tag].get("id", tag) if tag in old else tag
        else:
            cell.pop("id", None)
        nb.cells.append(cell)
    return nbformat.writes(nb) + "\n"


# --- student copies ----------------------------------------------------------------------------------------

NBVAL_IGNORE_TAG = "nbval-ignore-output"  # nbval runs the student copies: these cells' outputs are not stored
EXERCISE_GET = re.compile(r"(\w+)\s*=\s*labkit\.exercises\.get\(\s*[\"']([^\"']+)[\"']")


def _source(cell: dict) -> str:
    return "".join(cell.source) if isinstance(cell.source, list) else cell.source


def _shown_text(cell: dict) -> str:
    """Every text an output of ``cell`` shows (streams, plain text, HTML, Markdown)."""
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append(out["text"] if isinstance(out["text"], str) else "".join(out["text"]))
        for mime in ("text/plain", "text/html", "text/markdown"):
            value = out.get("data", {}).get(mime)
            if value:
                parts.append(value if isinstance(value, str) else "".join(value))
    return "\n".join(parts)


def _prediction_ids() -> set[str]:
    """The ids of labkit's exercises that are predictions (a value guessed before a cell measures it)."""
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    from labkit import exercises

    return {i for i in exercises.ids() if isinstance(exercises.get(i), exercises.Prediction)}


def measured_pattern(check_output: str) -> re.Pattern | None:
    """How an output may show the value a prediction's check measured, from that check's output ("you
    predicted P and it is M. ..." or "..., the measurement says M. ..."; M a repr): a number in any of the
    forms 5000, 5,000 and 5000.0, or the string itself, case-insensitive. None when the output says neither."""
    m = re.search(r"(?:and it is|the measurement says) (.+)", check_output)
    if not m:
        return None
    said = m.group(1)
    if said[:1] in "'\"":
        end = said.find(said[0], 1)
        return re.compile(re.escape(said[1:end]), re.IGNORECASE) if end > 1 else None
    number = re.match(r"(?:np\.\w+\()?(-?\d[\d,]*(?:\.\d+)?)", said)
    if not number:
        return None
    value = float(number.group(1).replace(",", ""))
    forms = {number.group(1)}
    if value.is_integer():
        forms |= {f"{int(value)}", f"{int(value):,}", f"{int(value)}.0"}
    else:
        forms |= {f"{value}", f"{value:,}"}
    alternatives = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return re.compile(rf"(?<![\w.,])(?:{alternatives})(?![\w]|[.,]\d)")


def answer_revealing_cells(nb: dict, predictions: set[str]) -> set[int]:
    """Cells whose stored output shows a prediction's measured value after the learner is asked to predict it.

    For each ``var = labkit.exercises.get("<a prediction>")``: its predict cell is the first cell from there
    calling ``var.predict(``, its check the first one after that calling ``var.check(``, and the check's output
    says what was measured. Every later code cell (to the end: a learner can scroll past the question) whose
    output shows that value is returned, except cells that show an exercise (their output is a task statement)
    and answers (blanked anyway).
    Cells before the question are context, read before predicting."""
    cells = nb.cells
    found: set[int] = set()
    for i, cell in enumerate(cells):
        for var, ex_id in EXERCISE_GET.findall(_source(cell)) if cell.cell_type == "code" else ():
            if ex_id not in predictions:
                continue
            asked = next((j for j in range(i, len(cells)) if f"{var}.predict(" in _source(cells[j])), None)
            check = next((j for j in range(asked or i, len(cells)) if f"{var}.check(" in _source(cells[j])), None)
            pattern = measured_pattern(_shown_text(cells[check])) if asked is not None and check is not None else None
            if pattern is None:
                continue
            found |= {j for j in range(asked + 1, len(cells)) if cells[j].cell_type == "code"
                      and SOLUTION_TAG not in cells[j].metadata.get("tags", [])
                      and "labkit.exercises.get(" not in _source(cells[j]) and pattern.search(_shown_text(cells[j]))}
    return found


def student_notebook(text: str, predictions: set[str] | None = None) -> tuple[str, int]:
    """A student copy of notebook JSON ``text`` and how many ``solution`` cells it blanked.

    Each cell tagged ``solution`` becomes a code cell ``# Your answer here`` with the same tags and no outputs;
    a cell tagged ``reveal`` (the check of a prediction, or a cell that shows what it measured) keeps its code
    but loses its output, and so does every later cell whose output shows a prediction's measured value
    (:func:`answer_revealing_cells`; ``predictions``: the ids of prediction exercises, default labkit's). Those
    cells are tagged ``nbval-ignore-output``: the student copies run under nbval like the lessons, and their
    outputs appear only when the learner runs them. Every other cell keeps its outputs. The jupytext pairing is
    removed so that opening the copy does not create a ``.py`` next to it."""
    nb = nbformat.reads(text, as_version=4)
    hidden = answer_revealing_cells(nb, _prediction_ids() if predictions is None else predictions)
    blanked = 0
    for i, cell in enumerate(nb.cells):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type == "code" and (REVEAL_TAG in tags or i in hidden):
            cell.outputs = []  # the learner runs it after predicting
            cell.execution_count = None
            cell.metadata["tags"] = [*tags, NBVAL_IGNORE_TAG]
        if SOLUTION_TAG not in tags:
            continue
        new = nbformat.v4.new_code_cell(STUDENT_PLACEHOLDER, metadata=dict(cell.metadata))
        if nb.nbformat_minor >= 5:
            new["id"] = cell.get("id") or f"solution-{i}"
        else:
            new.pop("id", None)
        nb.cells[i] = new
        blanked += 1
    nb.metadata.pop("jupytext", None)
    return nbformat.writes(nb) + "\n", blanked


def render_students_readme(rows: list[tuple[Lesson, int]]) -> str:
    """``students/README.md`` for the student copies ``rows`` (lesson, number of answers removed)."""
    out = [
        "# Student copies", "", GENERATED_NOTE, "",
        "These are the Schema Lab lessons for learners: every exercise is waiting for your answer. Every cell",
        f"that holds a worked answer in the complete lesson (tagged `{SOLUTION_TAG}`) is an empty code cell",
        f"`{STUDENT_PLACEHOLDER}` here: write your answer there and run `ex.check(...)` on it. `ex.hint()` gives a",
        "hint and `ex.solution()` shows a worked answer when you want to peek. Cells that measure what a",
        "prediction asks about (and later cells that show that figure) have no stored output: it appears when you",
        "run them, after you have predicted. Everything else, including the stored outputs, is as in",
        "[notebooks/](../notebooks/README.md), where the complete lessons (with the answers) live for instructors.",
        "Start at [00](00_start_here.ipynb), or pick a lesson in [CONTENTS.md](../CONTENTS.md).", "",
        "Cells after an exercise may use the variable the answer defines; run your answer first.", "",
        "| # | Lesson | Minutes | Answers removed |", "|---|---|---:|---:|",
    ]
    for lesson, blanked in rows:
        out.append(f"| {lesson.number} | [{_cell(lesson.title)}]({lesson.name}.ipynb) | {lesson.minutes} | {blanked} |")
    if not rows:
        out.append("| | (no built notebooks yet: run `python3 dev.py build-notebooks`) | | |")
    return "\n".join(out) + "\n"


def render_notebooks_readme(all_lessons: list[Lesson]) -> str:
    """``notebooks/README.md``: what this folder is, for whoever opens it in JupyterLab's file browser."""
    out = [
        "# Complete lessons, with the answers (for instructors)", "", GENERATED_NOTE, "",
        "Every lesson here has its exercises answered and run, predictions included: this is the instructor's "
        "copy, and what the tests check. **Learners:** work in [students/](../students/README.md) instead (the same "
        "lessons with the answers left for you), starting from [CONTENTS.md](../CONTENTS.md).", "",
        "Contributors: each notebook is generated from its py:percent source in `src/` "
        "(`python3 dev.py build-notebooks NAME`); edit the source, not the notebook.", "",
        "| # | Lesson (with answers) | Student copy |", "|---|---|---|",
    ]
    for x in all_lessons:
        out.append(f"| {x.number} | [{_cell(x.title)}]({x.name}.ipynb) | [students/{x.name}.ipynb]"
                   f"(../students/{x.name}.ipynb) |")
    return "\n".join(out) + "\n"


# --- INSTRUCTOR.md -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Format:
    """A workshop format: the length of each day, its breaks (in order) and, optionally, a track.

    ``lessons``: the lesson numbers taught, in this order (empty: every lesson in number order).
    ``shortened``: (lesson number, teaching minutes) for lessons given a shorter slot in this format.
    ``cap``: when not 0, no lesson is taught for longer than this (the rest of its notebook is reading).
    ``room_exercises``: None: every lesson's exercises are done in the room (its slot is teaching + exercises);
    otherwise the lessons whose exercises may be done in the room, in order of preference: each is brought into
    the room while its day still keeps its spare time, the others are homework.
    ``days``: how many days of ``total`` minutes each (breaks and opening repeat every day).
    """

    key: str
    title: str
    total: int
    breaks: tuple[tuple[str, int], ...]
    lessons: tuple[str, ...] = ()
    shortened: tuple[tuple[str, int], ...] = ()
    cap: int = 0
    room_exercises: tuple[str, ...] | None = None
    days: int = 1
    about: str = ""

    def teach_minutes(self, lesson: Lesson) -> int:
        """The lesson's teaching minutes in this format (shortened, capped or as in its metadata)."""
        short = dict(self.shortened)
        if lesson.number in short:
            return short[lesson.number]
        return min(lesson.minutes, self.cap) if self.cap else lesson.minutes

    def track(self, all_lessons: list[Lesson]) -> list[Lesson]:
        """The lessons this format teaches that exist in ``all_lessons``, in teaching order."""
        if not self.lessons:
            return list(all_lessons)
        by_number = {x.number: x for x in all_lessons}
        return [by_number[n] for n in self.lessons if n in by_number]


_DAY_BREAKS = (("Break", 15), ("Lunch", 45), ("Break", 15))
ANTI_PATTERN_TRACK = ("30", "31", "32", "33", "34", "35", "36", "37", "38", "39")
TWO_DAY_TRACK = tuple(f"{n:02d}" for n in (0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 19,
                                            30, 31, 32, 33, 34, 35, 36, 37, 38, 39))
TWO_DAY_ROOM_EXERCISES = ("00", "31", "32", "35", "37", "10", "11", "02", "04")
FORMATS = (
    Format("taster", "90-minute taster", 90, (), room_exercises=("00", "01"),
           about="The method (00) and the first modelling decision (01)."),
    Format("half-day", "Half day (3.5 h)", 210, (("Break", 15),)),
    Format("full-day", "Full day (6.5 h)", 390, _DAY_BREAKS),
    Format("anti-patterns-half-day", "Anti-patterns half day (4 h)", 240, (("Break", 15),),
           lessons=("30", "31", "32", "35", "37", "39"), shortened=(("39", 20),),
           room_exercises=("32", "35", "31", "37"),
           about="The anti-patterns that cost most in production (unbounded arrays, unnecessary indexes, "
                 "case-insensitive queries, after the hard limits), then a short schema review (39 shortened "
                 "to its demonstration)."),
    Format("anti-patterns-full-day", "Anti-patterns full day (7 h)", 420, _DAY_BREAKS, lessons=ANTI_PATTERN_TRACK,
           cap=20, room_exercises=("32", "35", "31", "37", "33", "34", "36", "38", "30", "39"),
           about="Every anti-pattern lesson, 30 to 39. Ten lessons with their exercises take far more than a "
                 "day, so each is presented in at most 20 minutes (its prediction, demonstration and "
                 "conclusions; the rest of the notebook is reading)."),
    Format("scale-out-half-day", "Scale out half day (3.5 h)", 210, (("Break", 15),),
           lessons=("00", "40", "41", "42"),
           about="Start here (the workload method: rates first), then the three sharding lessons, each with its "
                 "exercises in the room. Without a server, the "
                 "sharding lessons run on labkit's simulated sharded cluster in each learner's kernel, at no cost. "
                 "To run them on a real cluster, point MONGODB_URI at a sharded cluster's mongos: on Atlas, a "
                 "sharded cluster is M30 and up ([Manage Clusters](https://www.mongodb.com/docs/atlas/"
                 "manage-clusters/); the sizing section below gives the room's measured needs). Create it for the "
                 "day, give each learner their own prefix (LABKIT_DB_PREFIX) and terminate it afterwards."),
    Format("two-day", "Two-day course (2 × 7.5 h)", 450, (("Break", 15), ("Lunch", 60), ("Break", 15)), cap=20,
           lessons=TWO_DAY_TRACK, shortened=(("39", 30),), room_exercises=TWO_DAY_ROOM_EXERCISES, days=2,
           about="Relationships, patterns and anti-patterns in number order. Every lesson with its exercises "
                 "takes far more than two realistic days, so each is presented in at most 20 minutes (39 in "
                 "30): its prediction, demonstration and conclusions; the rest of the notebook is reading. The "
                 "capstone (08), trees (17), archive and versioning (18) and the pattern quiz (20) are left "
                 "for self-study: they combine what the other lessons show. The Scale out section (40-42) has its "
                 "own half day."),
)
SCALE_OUT = "Scale out"  # the section whose lessons connect to a mongos (a sharded cluster)
ON_A_SHARDED_CLUSTER = "on a sharded cluster"
SPARE_SHARE = 0.10  # every day keeps at least this share of its length free: questions, stragglers, a slow cluster
OPENING = ("Welcome; everyone runs `python3 dev.py doctor` and opens lesson 00 of students/", 10)
NEXT_DAY_OPENING = ("Recap of the day before; questions; `python3 dev.py workshop progress` on screen", 10)
CLOSING = ("Wrap-up and questions", 5)


@dataclass(frozen=True)
class Agenda:
    """A planned session: rows of (start, minutes, item) per day, the lessons covered, left out and homework."""

    format: Format
    days: tuple[tuple[tuple[int, int, str], ...], ...]
    covered: tuple[Lesson, ...]
    left_out: tuple[Lesson, ...]
    homework: tuple[tuple[Lesson, ...], ...] = ()  # per day: lessons whose exercises are homework
    in_room: frozenset[str] = frozenset()  # lesson numbers whose exercises are done in the room

    @property
    def rows(self) -> tuple[tuple[int, int, str], ...]:
        """The first day's rows (the only day of a one-day format)."""
        return self.days[0] if self.days else ()

    @property
    def end(self) -> int:
        """Minutes from the start to the end of the last row of the first day."""
        return self.rows[-1][0] + self.rows[-1][1] if self.rows else 0

    def day_end(self, day: int) -> int:
        """Minutes from the start of day ``day`` (0-based) to the end of its last row."""
        rows = self.days[day]
        return rows[-1][0] + rows[-1][1] if rows else 0

    def exercise_in_room(self, lesson: Lesson) -> bool:
        """True when the lesson's exercises are done in the room (False: homework, or it has none)."""
        return lesson.number in self.in_room

    def slot_minutes(self, lesson: Lesson) -> int:
        """Room time for the lesson: teaching plus its exercises when they are done in the room."""
        return self.format.teach_minutes(lesson) + (lesson.exercise_minutes if self.exercise_in_room(lesson) else 0)


def spare_minutes(fmt: Format) -> int:
    """The minutes each day of ``fmt`` keeps free: at least SPARE_SHARE of the day, rounded up."""
    return -(-fmt.total * round(SPARE_SHARE * 100) // 100)


def _day_budget(fmt: Format, day: int) -> int:
    opening = OPENING if day == 0 else NEXT_DAY_OPENING
    return fmt.total - opening[1] - CLOSING[1] - sum(m for _, m in fmt.breaks) - spare_minutes(fmt)


def plan(fmt: Format, all_lessons: list[Lesson]) -> Agenda:
    """Plan ``fmt`` deterministically.

    1. The format's lessons, in its order (all lessons in number order unless it names a track). A lesson's
       slot is its teaching minutes (shortened or capped by the format), plus its exercise minutes when the
       format does every exercise in the room.
    2. Content budget per day = day length - opening - closing - that day's breaks - the spare (SPARE_SHARE of
       the day, rounded up).
    3. Lessons are taken in order while the next one's slot still fits in the day; a lesson that does not fit
       starts the next day; on the last day, the first lesson that does not fit ends the agenda.
    4. A format with a list of room exercises then brings them into the room in its order of preference, each
       on its lesson's day while that day's content stays within the budget; the others are homework.
    5. Each day's breaks are spread evenly: break k of n goes before the first lesson whose midpoint falls
       after k/(n+1) of that day's content. Breaks that would fall after the day's last lesson are dropped.
    """
    track = fmt.track(all_lessons)
    every = fmt.room_exercises is None
    in_room = {x.number for x in track if x.exercise_minutes} if every else set()

    def slot(lesson: Lesson) -> int:
        return fmt.teach_minutes(lesson) + (lesson.exercise_minutes if lesson.number in in_room else 0)

    per_day: list[list[Lesson]] = [[] for _ in range(fmt.days)]
    day, used, taken = 0, 0, 0
    for lesson in track:
        while day < fmt.days and used + slot(lesson) > _day_budget(fmt, day):
            day, used = day + 1, 0
        if day == fmt.days:
            break
        per_day[day].append(lesson)
        used += slot(lesson)
        taken += 1
    if not every:
        for number in fmt.room_exercises or ():
            d = next((i for i, items in enumerate(per_day) if any(x.number == number for x in items)), None)
            lesson = next((x for x in per_day[d] if x.number == number), None) if d is not None else None
            if lesson is None or not lesson.exercise_minutes:
                continue
            if sum(slot(x) for x in per_day[d]) + lesson.exercise_minutes <= _day_budget(fmt, d):
                in_room.add(number)
    days = []
    for d, items in enumerate(per_day):
        if not items and d:
            continue
        opening = OPENING if d == 0 else NEXT_DAY_OPENING
        rows: list[tuple[int, int, str]] = [(0, opening[1], opening[0])]
        content_total = sum(slot(x) for x in items)
        clock, content, pending = opening[1], 0, list(fmt.breaks)
        n_breaks = len(fmt.breaks)
        for lesson in items:
            minutes = slot(lesson)
            done = n_breaks - len(pending)
            if pending and content > 0 and content + minutes / 2 > (done + 1) * content_total / (n_breaks + 1):
                name, length = pending.pop(0)
                rows.append((clock, length, f"**{name}**"))
                clock += length
            teach = fmt.teach_minutes(lesson)
            short = f", shortened from {lesson.minutes}" if teach != lesson.minutes else ""
            if lesson.number in in_room:
                ex = f" + {lesson.exercise_minutes} exercises"
            elif lesson.exercise_minutes:
                ex = "; exercises as homework"
            else:
                ex = ""
            rows.append((clock, minutes, f"[{_cell(lesson.number + ' · ' + lesson.title)}](students/{lesson.name}.ipynb) "
                                         f"({teach}{short}{ex})"))
            clock += minutes
            content += minutes
        rows.append((clock, CLOSING[1], CLOSING[0]))
        days.append(tuple(rows))
    in_room &= {x.number for items in per_day for x in items}
    homework = tuple(tuple(x for x in items if x.exercise_minutes and x.number not in in_room)
                     for items in per_day if items)
    return Agenda(fmt, tuple(days), tuple(track[:taken]), tuple(track[taken:]), homework, frozenset(in_room))


def _numbers(items: tuple[Lesson, ...]) -> str:
    return ", ".join(x.number for x in items)


def _kinds(lesson: Lesson) -> str:
    """"1 prediction, 2 build tasks" for the lesson's labkit exercises."""
    parts = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in ((lesson.predictions, "prediction"),
                                                               (lesson.tasks, "build task")) if n]
    return ", ".join(parts) or "none"


def _room_sentence(agenda: Agenda) -> str:
    """What the agenda does with the exercises, as a sentence."""
    covered = [x for x in agenda.covered if x.exercise_minutes]
    room = [x.number for x in covered if agenda.exercise_in_room(x)]
    home = [x.number for x in covered if not agenda.exercise_in_room(x)]
    if not home:
        return "Every lesson's exercises are done in the room."
    if not room:
        return "Every exercise is homework."
    return f"The exercises of {', '.join(room)} are done in the room; those of {', '.join(home)} are homework."


def render_instructor(all_lessons: list[Lesson]) -> str:
    """The instructor guide (agendas, demos, common mistakes, shared-cluster setup)."""
    out = [
        "# Schema Lab: instructor guide", "", GENERATED_NOTE, "",
        "Everything here comes from each notebook's `labkit` metadata (YAML header of `notebooks/src/NN_name.py`):",
        "`minutes` (teaching time, also shown to self-paced learners in [CONTENTS.md](CONTENTS.md)),",
        "`exercise_minutes` (extra room time for the exercises; default 5 when the lesson has a cell tagged",
        f"`{SOLUTION_TAG}`, else 0; never less than the lesson's exercises take: {PREDICTION_MINUTES} minutes per "
        f"prediction and {TASK_MINUTES} per build task),",
        "`demo` (what to show live) and `mistakes` (what learners commonly get wrong).",
        f"Change the metadata, then run `{REGENERATE}`.", "",
        "## Lessons at a glance", "",
        "| # | Lesson | Section | Exercises | Teach | Exercise min | Slot |", "|---|---|---|---|---:|---:|---:|",
    ]
    for x in all_lessons:
        out.append(f"| {x.number} | [{_cell(x.title)}](notebooks/{x.name}.ipynb) | {_cell(x.section)} | "
                   f"{_kinds(x)} | {x.minutes} | {x.exercise_minutes} | {x.slot_minutes} |")
    out.append(f"| | **Total** | | | **{sum(x.minutes for x in all_lessons)}** | "
               f"**{sum(x.exercise_minutes for x in all_lessons)}** | **{sum(x.slot_minutes for x in all_lessons)}** |")
    out += [
        "", "## Agendas", "",
        "Each agenda is planned by one fixed rule (`plan` in `tools/gen_docs.py`), so it changes predictably "
        "when lessons are added:",
        "",
        "1. A format names its lessons (a track, e.g. the anti-patterns 30-39) or takes every lesson in number "
        "order. A format may shorten a lesson's teaching slot (named lessons, or a cap for every lesson: the rest "
        "of the notebook becomes reading). A lesson's exercises take their own minutes (see the table above); "
        "the shorter formats list the lessons whose exercises they would do in the room, in order of preference.",
        f"2. Each day opens with {OPENING[1]} minutes of welcome and setup check (later days: {NEXT_DAY_OPENING[1]} "
        f"minutes of recap) and closes with {CLOSING[1]} minutes of wrap-up; the breaks listed for the format are "
        f"reserved too, and at least {SPARE_SHARE:.0%} of every day is kept spare.",
        "3. Lessons are taken in the format's order while the next lesson's slot still fits in what is left of "
        "the day; one that does not fit starts the next day, and on the last day it ends the agenda.",
        "4. Exercises are then brought into the room in the format's order of preference, each while its day "
        "still keeps its spare; the others are homework.",
        "5. Breaks are spread evenly over each day: each goes before the first lesson whose midpoint falls past "
        "its share of the day's content. Breaks that would fall after the day's last lesson are dropped.",
        "",
        "Times are offsets from the start (`h:mm`). The spare time at the end is for questions, for letting the "
        "room finish the exercises, or for a cluster that is slower than planned. Learners open the lessons in "
        "`students/` (the links below); you present from the complete copies in `notebooks/`.",
    ]
    for fmt in FORMATS:
        if not fmt.track(all_lessons):
            continue  # a course without this format's track
        agenda = plan(fmt, all_lessons)
        out += ["", f"### {fmt.title}", ""]
        if fmt.about or fmt.room_exercises is not None:
            out += [_md(" ".join(filter(None, [fmt.about, _room_sentence(agenda)]))), ""]
        for d, rows in enumerate(agenda.days):
            if fmt.days > 1:
                out += [f"**Day {d + 1}**", ""]
            out += ["| Time | Minutes | Item |", "|---|---:|---|"]
            for start, minutes, item in rows:
                out.append(f"| {fmt_clock(start)}–{fmt_clock(start + minutes)} | {minutes} | {item} |")
            out.append("")
            if fmt.days > 1 and d < len(agenda.homework) and agenda.homework[d]:
                out += [f"Homework after day {d + 1}: the exercises of {_numbers(agenda.homework[d])}.", ""]
        ends = [agenda.day_end(d) for d in range(len(agenda.days))]
        when = (f"ends at {fmt_clock(ends[0])}; {fmt.total - ends[0]} min spare" if fmt.days == 1 else
                "; ".join(f"day {d + 1} ends at {fmt_clock(e)} ({fmt.total - e} min spare)" for d, e in enumerate(ends)))
        room = sum(agenda.slot_minutes(x) for x in agenda.covered)
        out.append(f"Covers {len(agenda.covered)} of {len(all_lessons)} lessons ({fmt_minutes(room)} of lessons and "
                   f"exercises) and {when}.")
        covered = {x.number for x in agenda.covered}
        not_covered = tuple(x for x in all_lessons if x.number not in covered)
        if not_covered:
            out.append(f"Not covered (self-study afterwards): {_numbers(not_covered)}.")
        homework = tuple(x for day in agenda.homework for x in day)
        if fmt.days == 1 and homework:
            out.append(f"Exercises as homework: {_numbers(homework)}.")
    out += ["", "## Per lesson: demo live, common mistakes"]
    for x in all_lessons:
        src = f"notebooks/src/{x.name}.py"
        out += ["", f"### {_label(x)}", "",
                f"{fmt_minutes(x.minutes)} teaching + {fmt_minutes(x.exercise_minutes)} exercises ({_kinds(x)}) · "
                f"[notebook](notebooks/{x.name}.ipynb) · [student copy](students/{x.name}.ipynb)", ""]
        out.append(f"**Demo live:** {x.demo}" if x.demo
                   else f"**Demo live:** _not written yet (add `labkit.demo` to the YAML header of `{src}`)._")
        out.append("")
        if x.mistakes:
            out.append("**Common mistakes:**")
            out.append("")
            out += [f"- {m}" for m in x.mistakes]
        else:
            out.append(f"**Common mistakes:** _not written yet (add a `labkit.mistakes` list to `{src}`)._")
    out += ["", render_shared_cluster(all_lessons)]
    out += render_sizing(all_lessons)
    out += ["", render_walkthrough(all_lessons), "", render_delivery(), "", render_presenter_script()]
    return "\n".join(out) + "\n"


def _footprint_file(all_lessons: list[Lesson]) -> Path | None:
    if not all_lessons:
        return None
    path = all_lessons[0].ipynb.parent.parent / "data" / "workshop_footprint.json"
    return path if path.exists() else None


ROOM = 30  # the room the guide sizes for


def shared_mode_lessons(all_lessons: list[Lesson]) -> list[str]:
    """The lessons that scale a demonstration down in shared-cluster mode (their code uses ``labkit.shared``)."""
    pattern = re.compile(r"labkit\.shared\.|shared_mode\(")
    return [x.number for x in all_lessons
            if any(pattern.search(ln) for ln in x.source.read_text(encoding="utf-8").splitlines()
                   if not ln.lstrip().startswith("#"))]


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""


def _workshop():
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    from labkit import workshop

    return workshop


def render_sizing(all_lessons: list[Lesson]) -> list[str]:
    """The "Sizing the cluster" section: ``workshop plan`` for the room, from the committed measurement."""
    path = _footprint_file(all_lessons)
    if path is None:
        return []
    workshop = _workshop()
    data = workshop.load_footprint(path)
    tiers = workshop.TIERS
    out = ["", "## Sizing the cluster", "",
           "Every lesson leaves databases behind until `python3 dev.py workshop cleanup`, and some lessons peak far "
           "above what they leave. The numbers below are measured, not estimated: `tools/measure_footprint.py` runs "
           "every lesson on the embedded engine, reads `dbStats` after every cell and counts the commands each cell "
           "sends (cached in `data/workshop_footprint.json`; `tests/test_workshop_plan.py` fails when a lesson "
           "changed since). Each seat also holds the database `workshop prepare` seeds and the learner's progress "
           "record. Print the same for your room, agenda and tier with "
           "`python3 dev.py workshop plan --learners 30 --shared --lessons 30,31,... --tier flex` (tiers: "
           + ", ".join(f"`{k}`" for k in tiers) + "): it names the tier to use and, when the room does not "
           "fit, how many learners the tier takes. Exit status 3 means the room does not fit.", "",
           "Tier limits used (storage counts `dataSize + indexSize`, as Atlas does for Free and Flex clusters):", "",
           "| Tier | Storage MB | Databases | Collections | Collections + indexes (recommended) | Operations per second "
           "| Database profiler | Concurrent index builds | Sharded cluster | Change streams (Atlas docs) |",
           "|---|---:|---:|---:|---:|---:|---|---:|---|---|"]
    for t in tiers.values():
        def num(v: int) -> str:
            return f"{v:,}" if v else "no limit"
        out.append(f"| {t.title} | {num(t.storage_mb)} | {num(t.databases)} | {num(t.collections)} | "
                   f"{num(t.collections_and_indexes)} | {num(t.ops_per_second)} | "
                   f"{'not supported' if 'profile' in t.refuses else 'yes'} | {t.index_builds} | "
                   f"{'yes' if t.sharding else 'no'} | {_md(t.change_streams_note) or 'not stated'} |")
    out += ["", "Sources: the Atlas manual (Atlas Free Cluster Limits and Atlas Flex Limitations: Operational Limits; "
                "Unsupported Commands in Atlas; FAQ: Database; FAQ: Storage) and the server's "
                "`maxNumActiveUserIndexBuilds` (default 3: further user index builds on the primary wait; "
                "SERVER-47155); sharding: Atlas \"Manage Clusters\" (M10 and M20 are replica sets only; M30 and up "
                "can be sharded, each shard a replica set with the tier's storage); change streams: Atlas "
                "\"Triggers Limitations\" (see below). Atlas changes its tiers: check the Free and Flex operational "
                "limits before a workshop.",
            "", "### Which tier for which agenda", "",
            f"For {ROOM} learners on one cluster in shared-cluster mode (`LABKIT_SHARED=1`), with every lesson's "
            "databases kept until `workshop cleanup`:", "",
            "| Agenda | Lessons | Tier to use | Room: storage MB | Room: databases | Room: collections + indexes "
            "| Atlas Free takes | Atlas Flex takes |", "|---|---|---|---:|---:|---:|---:|---:|"]
    agendas = [("The whole course", [x.number for x in all_lessons])]
    agendas += [(fmt.title, [x.number for x in plan(fmt, all_lessons).covered]) for fmt in FORMATS]
    sharding = {x.number for x in all_lessons if x.section == SCALE_OUT}
    agendas += [(f"{title}, {ON_A_SHARDED_CLUSTER}", numbers) for title, numbers in agendas if sharding & set(numbers)]
    for title, numbers in agendas:
        room_kind = {"lessons": numbers, "shared": True, "footprint": data,
                     "sharded": title.endswith(ON_A_SHARDED_CLUSTER)}
        best = workshop.recommend_tier(ROOM, **room_kind)
        room = best["room"]
        free = workshop.max_learners("free", **room_kind)
        flex = workshop.max_learners("flex", **room_kind)
        note = "" if best["comfortable"] else " (over the recommended collections + indexes: slower)"
        out.append(f"| {_md(title)} | {', '.join(numbers)} | {best['tier'].title}{note} | {room['storage_mb']:,.0f} | "
                   f"{room['databases']:,} | {room['collections'] + room['indexes']:,} | "
                   f"{free} learner{'s' if free != 1 else ''} | {flex} learner{'s' if flex != 1 else ''} |")
    free_t, flex_t = tiers["free"], tiers["flex"]
    whole = workshop.plan(ROOM, "free", shared=True, footprint=data)
    seat = whole["learner"]["seat"]
    out += ["", f"Atlas Free and Flex allow {free_t.databases} databases and {free_t.collections} collections for "
                f"the whole cluster. Each seat starts with {seat['databases']} databases (the seeded one and the "
                f"progress record) and every lesson adds one to three, so a room of {ROOM} outgrows them in the "
                "first lesson: on Free or Flex, give each learner a cluster of their own (one Free cluster per "
                "Atlas project), or keep the room as small as the table says. For a room on one cluster, use the "
                "tier in the third column."]
    if sharding:
        scale = [fp for fp in data["lessons"].values() if fp.get("shards")]
        out += ["", f"**The {SCALE_OUT} lessons** ({_and(sorted(sharding))}) connect to a mongos. On a replica set "
                    "(the rows without \"on a sharded cluster\") they run on labkit's simulated cluster in each "
                    "learner's kernel and cost the room's cluster nothing. The rows \"on a sharded cluster\" are for "
                    "a room whose `MONGODB_URI` points at a sharded cluster's mongos: Atlas shards M30 and up only, "
                    "and what the lessons create there was measured through the simulated cluster's mongos "
                    f"(`dbStats`, summed over its {max((fp['shards'] for fp in scale), default=0)} shards; "
                    "`workshop plan --sharded`). The storage check compares the room with one shard's storage: "
                    "Atlas's limit is per shard, and small collections stay on their database's primary shard. "
                    "Atlas deploys each shard as a replica set of the cluster's tier and the config servers as one "
                    "more, so a sharded cluster is billed for every shard's nodes for every hour it exists: create "
                    "it for the day and terminate it afterwards. What the simulated cluster shows is MongoDB 8.0's "
                    "routing, targeting, explain, ranges, balancer rounds by data size, jumbo ranges and resharding; "
                    "it does not balance in the background (the lessons run balancer rounds themselves), and has no "
                    "zones, orphaned documents or replica-set members inside a shard (README, \"A sharded cluster\"; "
                    "docs/embedded-engine.md lists every rule). On a real cluster the balancer runs on its own, so "
                    "the ranges a lesson shows there can differ from the stored outputs; the lessons' figures are "
                    "read from what the cluster answers."]
    out += _rate_limit(workshop, data, all_lessons)
    users = workshop.profiler_lessons(all_lessons[0].source.parent) if all_lessons else []
    if users:
        out += ["", f"**The database profiler.** Lesson{'s' if len(users) > 1 else ''} {_and(users)} turn"
                    f"{'' if len(users) > 1 else 's'} the profiler on (`db.command(\"profile\", 2)`) to see what each "
                    "operation examined. Atlas Free and Flex do not support the `profile` command (the manual: "
                    "Unsupported Commands in Atlas), so there the lesson has to read the same numbers from a query "
                    "log it writes itself (`workshop plan` lists the lesson against those tiers). On M10 and up, "
                    "and on the served or embedded engine, the profiler works."]
    out += _replica_set_features(workshop)
    full = workshop.recommend_tier(ROOM, footprint=data)
    out += ["", f"### The whole course, {ROOM} learners, full scale, {full['tier'].title}", "",
            workshop.format_plan(full)]
    small = workshop.plan(ROOM, full["tier"].name, shared=True, footprint=data)
    numbers = shared_mode_lessons(all_lessons)
    out += ["", "### With `LABKIT_SHARED=1`", "",
            f"Lessons {_and(numbers)} scale their demonstrations down: one learner peaks at "
            f"{small['learner']['storage_mb']:.1f} MB (instead of {full['learner']['storage_mb']:.1f} MB), "
            f"{small['learner']['collections']} collections (instead of {full['learner']['collections']}) and "
            f"{small['learner']['indexes']} indexes (instead of {full['learner']['indexes']}); the room of {ROOM} "
            f"needs {small['room']['storage_mb']:,.0f} MB and {small['room']['collections'] + small['room']['indexes']:,} "
            f"collections + indexes on {small['tier'].title}."]
    return out


def _replica_set_features(workshop) -> list[str]:
    """Which lessons use change streams and transactions, and what the Atlas docs say per tier (test first)."""
    streams, txns = workshop.change_stream_lessons(), workshop.transaction_lessons()
    if not streams and not txns:
        return []
    caps = {name: workshop.TIERS[name].change_streams for name in ("free", "flex", "m10", "m30")}
    return ["", f"**Change streams and transactions.** Lessons {_and(streams)} open a change stream for a durable "
                f"worker (`watch()`); lessons {_and(txns)} run multi-document transactions. Both need a replica set "
                "or a sharded cluster: a standalone `mongod` (such as a plain `mongodb://localhost:27017`) refuses "
                "transactions, and refuses `$changeStream` with code 40573, `The $changeStream stage is only "
                "supported on replica sets` (https://www.mongodb.com/docs/manual/changeStreams/, "
                "https://www.mongodb.com/docs/manual/core/transactions/, and the server's "
                "https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/pipeline/document_source_change_stream.cpp). "
                "Atlas clusters are replica sets (a Free cluster has three nodes, says its limits page) or sharded "
                "clusters, and the Atlas pages we read state no transaction limit for Free or Flex. On change "
                "streams the Atlas docs disagree about Flex: the Triggers limitations page "
                "(https://www.mongodb.com/docs/atlas/atlas-ui/triggers/limitations/) says \"Flex Clusters don't "
                "support change streams\", while the table on the same page, of the change streams open against a "
                f"cluster at once, gives Flex {caps['flex']}, Free {caps['free']}, M10/M20 {caps['m10']} and M30 "
                f"and up {caps['m30']:,} (it does not say whether streams a driver opens count); check the Flex "
                "limitations page (https://www.mongodb.com/docs/atlas/reference/flex-limitations/) too. Each "
                f"learner's worker holds one stream open at a time, so a room of {ROOM} on one Free or Flex cluster "
                "may also meet that table's cap (`workshop plan` lists it). **Test the cluster first**, Flex in "
                "particular: run lesson 05 to its worker cell, or open one stream in mongosh (`db.test.watch()`). "
                "Where the deployment refuses the stage (40573, or Atlas's `not allowed` error 8000 naming "
                "`$changeStream`), the lessons print one line saying so and run their batch job instead (the "
                "reconciliation job in 05, the preview rebuild in 06), so every later cell still runs; any other "
                "error stops the cell."]


def _rate_limit(workshop, data: dict, all_lessons: list[Lesson]) -> list[str]:
    """What the Free and Flex operation rate limits mean for the room, from the measured commands per cell."""
    free, flex = workshop.TIERS["free"], workshop.TIERS["flex"]
    # the Scale out lessons (measured on a simulated cluster: ``shards``) never run on Free or Flex, which cannot shard
    measured = sorted((fp for fp in data["lessons"].values() if fp.get("operations") is not None
                       and not fp.get("shards")),
                      key=lambda fp: -fp["max_operations_in_cell"])
    if not measured:
        return []
    titles = {x.number: x.title for x in all_lessons}
    out = ["", f"**The operation rate limit.** Atlas Free serves {free.ops_per_second} operations per second for "
               f"the whole cluster, Flex {flex.ops_per_second}; above that Atlas throttles the cluster's connections "
               "and queues the operations (Atlas Free Cluster Limits and Flex Limitations: Operational Limits). "
               f"For {ROOM} learners that is {free.ops_per_second / ROOM:.1f} operations per second each on Free, "
               f"{flex.ops_per_second / ROOM:.1f} on Flex. The busiest cells, measured (commands sent by one run "
               "of the cell), and how long the cluster needs at best when the whole room runs them together:", "",
           f"| Lesson | Commands in its busiest cell | Room of {ROOM}: operations | On Free | On Flex |",
           "|---|---:|---:|---:|---:|"]
    for fp in measured[:5]:
        burst = fp["max_operations_in_cell"] * ROOM
        out.append(f"| {fp['lesson']} · {_cell(titles.get(fp['lesson'], fp['name']))} | "
                   f"{fp['max_operations_in_cell']:,} | {burst:,} | {fmt_seconds(burst / free.ops_per_second)} | "
                   f"{fmt_seconds(burst / flex.ops_per_second)} |")
    quiet = [fp["lesson"] for fp in measured if fp["max_operations_in_cell"] * ROOM <= free.ops_per_second]
    out += ["", f"{len(quiet)} of {len(measured)} lessons {'has' if len(quiet) == 1 else 'have'} no cell that a room "
                f"of {ROOM} could not run within one second on Free. The others wait: on Free or Flex, run their busiest cells once on the projector "
                "rather than in every learner's notebook, or use M10 and up, which have no operation rate limit. "
                "A slider sends commands on every step too: a room dragging sliders together is a burst of its own."]
    return out


def fmt_seconds(seconds: float) -> str:
    """``42.3`` -> ``"42 s"``; ``754`` -> ``"13 min"``; ``9961`` -> ``"2.8 h"``."""
    if seconds < 90:
        return f"{seconds:,.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:,.0f} min"
    return f"{seconds / 3600:,.1f} h"


def _instructor_commands() -> str:
    return "`python3 dev.py` (or, in an activated environment, `python -m labkit`)"


def render_presenter_script() -> str:
    """"Live demo: presenter script", with the figures the dashboard computes (labkit.demo)."""
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    from labkit import demo

    f = demo.presenter_figures()
    return f"""## Live demo: presenter script

`python3 dev.py demo` opens `notebooks/demo_dashboard.ipynb` in Voila. It has four panels. Each shows numbers and,
under them, a **takeaway** line computed from those numbers: read it out, then point at the number it names.
Panels 2 and 3 also draw the plan the engine chose, as a tree of stages (a blocking sort red, a collection scan
orange, the index used green). The figures below are computed by the same code as the dashboard
(`labkit/demo.py`).

1. **Posts by the busiest author** (slider: posts by one author). Start at {f['start']:,}: embedded posts are
   already {f['embedded_share']:.1%} of 16 MiB, `postIds` a fraction of that, child references
   {f['child_bytes']:,} bytes. Drag past {f['wall_embedded']:,} (the first slider stop beyond it is
   {f['past_wall']:,}) and on to the end: the takeaway turns to "past the 16 MiB limit ... every write to this user
   fails". Ids alone would cross 16 MiB at {f['wall_ids']:,} posts (the line above the slider says both). The
   point: the parent-side array is bounded by the busiest author, not the average one; the child reference does
   not grow at all (lessons 02, 11, 32).
2. **Feed query plan** (rank of the author, index). With *no index*, every post of the collection is read and
   sorted in memory, whoever the author: the drawing shows a red SORT over an orange COLLSCAN. With
   `{{authorId: 1}}`, rank 1 ({f['celebrity_posts']:,} posts) fetches and sorts all of them to return
   {f['feed_limit']}, an author further down the ranking only a handful: the cost grows with the author. With
   `{{authorId: 1, createdAt: -1, _id: -1}}` the drawing loses its SORT and the takeaway reads "{f['feed_limit']}
   keys and {f['feed_limit']} documents examined, whether the author has {f['celebrity_posts']:,} posts or a
   million": equality, then sort, and the limit stops the scan (lessons 02, 03, 35).
3. **Case-insensitive login** (query form, what was typed). The regex `/^sam$/i` on a plain index examines every
   key to find one user (the drawing shows the IXSCAN's keys examined against its one result); the index with a
   case-insensitive collation, queried with the same collation, and the lower-case copy seek straight to the
   name, for `sam`, `SAM` or `Sam` alike (lesson 37).
4. **Schema review of the legacy store** (a finding). Pick findings one by one: each has a severity, where it
   is, the measured evidence, the fix and the lesson that teaches it; together they are lesson 39's checklist
   (lessons 32-38 for each kind)."""


def render_walkthrough(all_lessons: list[Lesson]) -> str:
    """"A workshop end to end", for the anti-pattern half day, with the tier the planner names for it."""
    fmt = next(f for f in FORMATS if f.key == "anti-patterns-half-day")
    numbers = [x.number for x in plan(fmt, all_lessons).covered]
    path = _footprint_file(all_lessons)
    workshop = _workshop()
    tier = (workshop.recommend_tier(ROOM, lessons=numbers, shared=True, footprint=workshop.load_footprint(path))
            ["tier"] if path else workshop.TIERS["m10"])
    return f"""## A workshop end to end

For a {ROOM}-person anti-pattern half day on one cluster (replace the URI; every command takes `--uri` instead of
`MONGODB_URI`). Run the commands from the checkout with {_instructor_commands()}.

1. **A week before: size it.** `python3 dev.py workshop plan --learners {ROOM} --shared --lessons
   {",".join(numbers)} --tier {tier.name}`: {tier.title} is the smallest tier that fits this room and agenda
   (see [Sizing the cluster](#sizing-the-cluster); on Free or Flex the plan says how many learners fit). Create
   the cluster and a database user, and allow the room's network (Atlas: Network Access).
2. **The day before: seat everyone.** `export MONGODB_URI="mongodb+srv://USER:PASSWORD@cluster.example.net"`,
   then `python3 dev.py workshop prepare --learners {ROOM}`. It proves the credentials and the quota by creating
   and seeding `sl_learner01_ready` ... `sl_learner{ROOM}_ready`, and prints the line each learner runs:
   `MONGODB_URI=... LABKIT_DB_PREFIX=sl_learnerNN_ LABKIT_SHARED=1 python3 dev.py lab` (on a JupyterHub, set the
   same variables in the learner's environment; see [Delivering the course](#delivering-the-course)).
3. **Doors open: check.** Everyone runs `python3 dev.py doctor`; you run
   `python3 dev.py workshop check --learners {ROOM}` until it exits 0 (every seat ready). Put the agenda from
   [Agendas](#agendas) on screen.
4. **During exercises: watch.** `python3 dev.py workshop progress --learners {ROOM}` in a terminal, or
   `labkit.workshop.progress_widget(labkit.connect(), {ROOM})` in a notebook on the projector: a column where most
   of the room is *attempted* is the exercise to walk through together.
5. **Live demos.** `python3 dev.py demo` opens `notebooks/demo_dashboard.ipynb` in Voila; follow the
   [presenter script](#live-demo-presenter-script).
6. **Afterwards: clean up.** `python3 dev.py workshop cleanup` drops every labkit-marked `sl_learnerNN_...`
   database and lists, untouched, any matching database labkit did not create.

The same commands work against `python3 dev.py serve` (the embedded engine served over the wire) for a
rehearsal without a cluster."""


def render_delivery() -> str:
    """How instructors put the lessons in front of a room: laptops, Binder, a JupyterHub with nbgitpuller."""
    return """## Delivering the course

Three ways to put the lessons in front of a room. All of them open lesson 00 of `students/` (no answers), with
CONTENTS.md and, apart, the complete copies in `notebooks/`; none needs a server or an account for the embedded
engine.

1. **Laptops.** Everyone clones the repository and runs `python3 dev.py lab` (Python 3.10+ with pip; about a
   minute to install). Nothing to host.
2. **Binder.** `python3 dev.py workshop links --repo https://github.com/OWNER/REPO` prints a mybinder.org link:
   Binder builds an image from `environment.yml` (the same packages as `dev.py lab` installs; the test tools
   are not in it), runs `postBuild` (`python3 dev.py lab-setup`: JupyterLab then hides the developer tree and
   opens Markdown as pages, as `dev.py lab` does) and opens `students/00_start_here.ipynb`. Binder sessions are
   temporary: learners download what they want to keep.
3. **Your JupyterHub with nbgitpuller.** Build the hub's user image from this repository's `environment.yml`
   and `postBuild` (repo2docker does both; on The Littlest JupyterHub, `conda env update -f environment.yml`
   then `./postBuild`), with nbgitpuller installed in it. Then
   `python3 dev.py workshop links --repo https://github.com/OWNER/REPO --hub https://hub.example.edu` prints the
   link to hand out: each click clones (or updates, keeping the learner's edits) the repository into the
   learner's home and opens lesson 00 there. For a shared cluster, set `MONGODB_URI`, `LABKIT_SHARED=1` and a
   per-learner `LABKIT_DB_PREFIX` in the hub's spawner environment (at most 38 bytes of database name on Free
   and Flex, prefix included).

`tests/test_delivery.py` checks what this machine can: the links' shape, that `environment.yml` lists exactly
what the lessons need, and that a JupyterLab configured by `postBuild` and started the way Binder starts it
(on a copy of the repository, at the link's `urlpath`) lists only CONTENTS.md, students/, notebooks/ and the
READMEs and opens lesson 00. It cannot run conda, Binder or a hub."""


def render_shared_cluster(all_lessons: list[Lesson]) -> str:
    """"Running the workshop on a shared cluster" (the lessons that scale down are read from the sources)."""
    numbers = shared_mode_lessons(all_lessons)
    return f"""## Running the workshop on a shared cluster

Learners can work entirely on the embedded engine (no server, nothing to set up). To have everyone use one
real cluster instead (commands from the checkout with {_instructor_commands()}):

1. **Point everyone at the cluster.** Each learner starts JupyterLab with the URI set, e.g.
   `MONGODB_URI="mongodb+srv://USER:PASSWORD@cluster.example.net" python3 dev.py lab`. labkit pings the server
   first and fails within 3 seconds with a `LabConnectionError` naming the host if it does not answer; passwords
   are always shown redacted. Have everyone run `python3 dev.py doctor` first: it reports versions, the engine,
   whether the server answers and whether widgets render.
2. **Size the room.** `python3 dev.py workshop plan --learners {ROOM} --shared --lessons ...` prints the
   measured footprint per lesson and for the room against a tier's limits and names the tier to use (see
   [Sizing the cluster](#sizing-the-cluster)).
3. **Give every learner a seat.** Workshop mode numbers the learners and gives learner *k* the database
   prefix `sl_learnerKK_`. Before the workshop, with `MONGODB_URI` set to the cluster:
   `python3 dev.py workshop prepare --learners {ROOM}` creates and seeds one marked database per learner
   (`sl_learner01_ready` ...) and prints the `LABKIT_DB_PREFIX` each learner must set, with `LABKIT_SHARED=1`.
   It refuses, before writing anything, if a database of the same name exists that labkit did not create.
   `--base NAME` changes the `sl_learner` part; `--users N` the size of the seeded data (0 for none).
4. **Learners set their prefix.** Learner 7 starts JupyterLab with
   `MONGODB_URI=... LABKIT_DB_PREFIX=sl_learner07_ LABKIT_SHARED=1 python3 dev.py lab`; every
   `labkit.fresh_db("02_one_to_many")` then creates `sl_learner07_02_one_to_many`, so nobody touches anybody
   else's data. (Without workshop mode, the prefix defaults to `sl_<OS user name>_`.) `LABKIT_SHARED=1` is
   shared-cluster mode: lessons {_and(numbers)} scale their heaviest demonstrations down and say so (lesson 34
   creates 60 per-tenant collections instead of 300; lessons 15 and 31 show the 64-index and 16 MiB limits on
   the embedded engine on the learner's machine, same limits, same error codes), and their bursts of index
   builds pause between builds so the room does not queue behind the primary's 3 build slots at once. The
   conclusions are the same.
5. **Check readiness.** `python3 dev.py workshop check --learners {ROOM}` lists every seat as ready or not, with
   the number of databases each learner has so far, and exits non-zero while any seat is missing.
6. **Watch the room.** `python3 dev.py workshop progress --learners {ROOM}` prints learner by exercise (✔ passed,
   … attempted, · not started) from each learner's `sl_learnerNN_progress` database, which every `ex.check(...)`
   updates; in a notebook, `labkit.workshop.progress_widget(client, {ROOM})` shows the same as a coloured grid that
   refreshes every 30 seconds and on its Refresh button.
7. **Clean up afterwards.** `python3 dev.py workshop cleanup` drops every labkit-marked database of the
   workshop (`sl_learnerNN_...`) and lists, untouched, any matching database labkit did not create.
   `python3 dev.py reset NAME` drops a single labkit database.

Every labkit command takes `--uri` and `--help`."""


# --- everything together -----------------------------------------------------------------------------------

def expected_files(root: Path = ROOT) -> dict[Path, str]:
    """Every generated file under ``root`` and the text it should have (computed in memory)."""
    root = Path(root)
    all_lessons = lessons(root / "notebooks")
    files: dict[Path, str] = {
        root / "CONTENTS.md": render_contents(all_lessons),
        root / "INSTRUCTOR.md": render_instructor(all_lessons),
        root / "notebooks" / "README.md": render_notebooks_readme(all_lessons),
    }
    student_rows: list[tuple[Lesson, int]] = []
    predictions = _prediction_ids() if any(x.ipynb.exists() for x in all_lessons) else set()
    for i, lesson in enumerate(all_lessons):
        nav, cited = navigation_markdown(all_lessons, i), sources_markdown(lesson)
        files[lesson.source] = py_with_navigation(lesson.source.read_text(encoding="utf-8"), nav, cited)
        if lesson.ipynb.exists():
            nb_text = ipynb_with_navigation(lesson.ipynb.read_text(encoding="utf-8"), nav, cited)
            files[lesson.ipynb] = nb_text
            student_text, blanked = student_notebook(nb_text, predictions)
            files[root / "students" / f"{lesson.name}.ipynb"] = student_text
            student_rows.append((lesson, blanked))
    files[root / "students" / "README.md"] = render_students_readme(student_rows)
    return files


def obsolete_files(root: Path = ROOT, expected: dict[Path, str] | None = None) -> list[Path]:
    """Student copies on disk that no lesson produces any more (to be deleted)."""
    expected = expected_files(root) if expected is None else expected
    return sorted(p for p in (Path(root) / "students").glob("*.ipynb") if p not in expected)


def stale_files(root: Path = ROOT, expected: dict[Path, str] | None = None) -> list[Path]:
    """Generated files whose content on disk differs from a fresh generation (or that are missing/obsolete)."""
    expected = expected_files(root) if expected is None else expected
    stale = [p for p, text in expected.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    return sorted(stale + obsolete_files(root, expected))


def write_all(root: Path = ROOT) -> list[Path]:
    """Write every stale generated file, delete obsolete student copies; returns the paths changed."""
    expected = expected_files(root)
    changed = stale_files(root, expected)
    for path in changed:
        if path in expected:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(expected[path], encoding="utf-8")
        else:
            path.unlink()
    return changed


def main(argv: list[str]) -> int:
    if argv and argv[0] in {"-h", "--help"}:
        print(__doc__)
        return 0
    if argv and argv != ["--check"]:
        print(f"unknown arguments {argv}\n{__doc__}", file=sys.stderr)
        return 2
    if argv == ["--check"]:
        stale = stale_files()
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)}")
        if stale:
            print(f"run `{REGENERATE}` to regenerate")
        return 1 if stale else 0
    changed = write_all()
    for path in changed:
        print(f"{'wrote' if path.exists() else 'deleted'} {path.relative_to(ROOT)}")
    print(f"{len(changed)} file(s) changed" if changed else "everything is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
