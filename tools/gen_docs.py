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
from notebook_meta import (NAVIGATION_TAG, REVEAL_TAG, ROOT, SOLUTION_TAG, SOURCES_TAG, Lesson,  # noqa: E402
                           lessons, sections)

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
        "exercises). Open them with `python3 dev.py lab`. Copies without the exercise answers are "
        "in [students/](students/README.md); workshop agendas are in [INSTRUCTOR.md](INSTRUCTOR.md).", "",
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
                "", "| # | Lesson | Lesson min | Exercise min | Total min |", "|---|---|---:|---:|---:|"]
        for x in items:
            out.append(f"| {x.number} | [{_cell(x.title)}](notebooks/{x.name}.ipynb) | {x.minutes} | "
                       f"{x.exercise_minutes} | {x.slot_minutes} |")
        out.append(f"| | **{_cell(section)} total** | **{sum(x.minutes for x in items)}** | "
                   f"**{sum(x.exercise_minutes for x in items)}** | **{minutes}** |")
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

def student_notebook(text: str) -> tuple[str, int]:
    """A student copy of notebook JSON ``text`` and how many ``solution`` cells it blanked.

    Each cell tagged ``solution`` becomes a code cell ``# Your answer here`` with the same tags and no outputs;
    a cell tagged ``reveal`` (the check of a prediction) keeps its code but loses its output; every other cell
    keeps its outputs. The jupytext pairing is removed so that opening the copy does not create
    a ``.py`` next to it."""
    nb = nbformat.reads(text, as_version=4)
    blanked = 0
    for i, cell in enumerate(nb.cells):
        tags = cell.get("metadata", {}).get("tags", [])
        if REVEAL_TAG in tags and cell.cell_type == "code":
            cell.outputs = []  # a prediction's reveal: the learner runs it after predicting
            cell.execution_count = None
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
        "These are the Schema Lab lessons with the exercise answers taken out. Every cell that holds a worked",
        f"answer (tagged `{SOLUTION_TAG}`) is replaced by an empty code cell `{STUDENT_PLACEHOLDER}`: write your",
        "answer there and run `ex.check(...)` on it. `ex.hint()` gives a hint and `ex.solution()` still shows a",
        "worked answer when you want it. Everything else, including the stored outputs, is as in",
        "[notebooks/](../notebooks), which is where the complete lessons live.", "",
        "Cells after an exercise may use the variable the answer defines; run your answer first.", "",
        "| # | Lesson | Minutes | Answers removed |", "|---|---|---:|---:|",
    ]
    for lesson, blanked in rows:
        out.append(f"| {lesson.number} | [{_cell(lesson.title)}]({lesson.name}.ipynb) | {lesson.minutes} | {blanked} |")
    if not rows:
        out.append("| | (no built notebooks yet: run `python3 dev.py build-notebooks`) | | |")
    return "\n".join(out) + "\n"


# --- INSTRUCTOR.md -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Format:
    """A workshop format: the length of each day, its breaks (in order) and, optionally, a track.

    ``lessons``: the lesson numbers taught, in this order (empty: every lesson in number order).
    ``shortened``: (lesson number, teaching minutes) for lessons given a shorter slot in this format.
    ``cap``: when not 0, no lesson is taught for longer than this (the rest of its notebook is reading).
    ``room_exercises``: the lessons whose exercise is done in the room (None: all); the others are homework.
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

    def exercise_in_room(self, lesson: Lesson) -> bool:
        """True when the lesson's exercise is done in the room (False: homework, or no exercise)."""
        return bool(lesson.exercise_minutes) and (self.room_exercises is None or lesson.number in self.room_exercises)

    def slot_minutes(self, lesson: Lesson) -> int:
        """Room time for the lesson in this format: teaching plus the exercise when it is done in the room."""
        return self.teach_minutes(lesson) + (lesson.exercise_minutes if self.exercise_in_room(lesson) else 0)

    def track(self, all_lessons: list[Lesson]) -> list[Lesson]:
        """The lessons this format teaches that exist in ``all_lessons``, in teaching order."""
        if not self.lessons:
            return list(all_lessons)
        by_number = {x.number: x for x in all_lessons}
        return [by_number[n] for n in self.lessons if n in by_number]


_DAY_BREAKS = (("Break", 15), ("Lunch", 45), ("Break", 15))
ANTI_PATTERN_TRACK = ("30", "31", "32", "33", "34", "35", "36", "37", "38", "39")
TWO_DAY_ROOM_EXERCISES = ("00", "10", "11", "31", "32", "35", "37")
FORMATS = (
    Format("taster", "90-minute taster", 90, ()),
    Format("half-day", "Half day (3.5 h)", 210, (("Break", 15),)),
    Format("full-day", "Full day (6.5 h)", 390, _DAY_BREAKS),
    Format("anti-patterns-half-day", "Anti-patterns half day (4 h)", 240, (("Break", 15),),
           lessons=("30", "31", "32", "35", "37", "38", "39"), shortened=(("39", 20),), room_exercises=(
               "31", "32", "35"),
           about="The anti-patterns that cost most in production, then a short schema review (39 shortened to "
                 "its demonstration). The exercises of 31, 32 and 35 are done in the room; the others are "
                 "homework."),
    Format("anti-patterns-full-day", "Anti-patterns full day (7 h)", 420, _DAY_BREAKS, lessons=ANTI_PATTERN_TRACK,
           room_exercises=("31", "32", "34", "35", "36"),
           about="Every anti-pattern lesson, 30 to 39. With a prediction and a build task each, lessons and "
                 "exercises take about 6.5 h before breaks, more than the day holds; the exercises of 31, 32, 34, "
                 "35 and 36 are done in the room, the others are homework."),
    Format("two-day", "Two-day course (2 × 7.5 h)", 450, (("Break", 15), ("Lunch", 60), ("Break", 15)), cap=20,
           shortened=(("39", 30),), room_exercises=TWO_DAY_ROOM_EXERCISES, days=2,
           about="Every lesson, in number order. All of them with all exercises take "
                 "about 21 h of room time, more than two realistic days, so in this format each lesson is "
                 "presented in at most 20 minutes (39 in 30): its demonstration and conclusions, the rest of the "
                 "notebook is reading. Exercises are done in the room for "
                 f"{', '.join(TWO_DAY_ROOM_EXERCISES)}; the others are homework, listed per day."),
)
OPENING = ("Welcome; everyone runs `python -m labkit doctor` and opens the first notebook", 10)
NEXT_DAY_OPENING = ("Recap of the day before; questions; `python -m labkit workshop progress` on screen", 10)
CLOSING = ("Wrap-up and questions", 5)


@dataclass(frozen=True)
class Agenda:
    """A planned session: rows of (start, minutes, item) per day, the lessons covered, left out and homework."""

    format: Format
    days: tuple[tuple[tuple[int, int, str], ...], ...]
    covered: tuple[Lesson, ...]
    left_out: tuple[Lesson, ...]
    homework: tuple[tuple[Lesson, ...], ...] = ()  # per day: lessons whose exercise is homework

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


def _day_budget(fmt: Format, day: int) -> int:
    opening = OPENING if day == 0 else NEXT_DAY_OPENING
    return fmt.total - opening[1] - CLOSING[1] - sum(m for _, m in fmt.breaks)


def plan(fmt: Format, all_lessons: list[Lesson]) -> Agenda:
    """Plan ``fmt`` deterministically.

    1. The format's lessons, in its order (all lessons in number order unless it names a track). Each lesson's
       slot is its teaching minutes (shortened or capped by the format) plus its exercise minutes when the
       exercise is done in the room (else it is homework).
    2. Content budget per day = day length - opening - closing - that day's breaks.
    3. Lessons are taken in order while the next one's slot still fits in the day; a lesson that does not fit
       starts the next day; on the last day, the first lesson that does not fit ends the agenda.
    4. Each day's breaks are spread evenly: break k of n goes before the first lesson whose midpoint falls
       after k/(n+1) of that day's content. Breaks that would fall after the day's last lesson are dropped.
    """
    track = fmt.track(all_lessons)
    per_day: list[list[Lesson]] = [[] for _ in range(fmt.days)]
    day, used, taken = 0, 0, 0
    for lesson in track:
        slot = fmt.slot_minutes(lesson)
        while day < fmt.days and used + slot > _day_budget(fmt, day):
            day, used = day + 1, 0
        if day == fmt.days:
            break
        per_day[day].append(lesson)
        used += slot
        taken += 1
    days = []
    for d, items in enumerate(per_day):
        if not items and d:
            continue
        opening = OPENING if d == 0 else NEXT_DAY_OPENING
        rows: list[tuple[int, int, str]] = [(0, opening[1], opening[0])]
        content_total = sum(fmt.slot_minutes(x) for x in items)
        clock, content, pending = opening[1], 0, list(fmt.breaks)
        n_breaks = len(fmt.breaks)
        for lesson in items:
            slot = fmt.slot_minutes(lesson)
            done = n_breaks - len(pending)
            if pending and content > 0 and content + slot / 2 > (done + 1) * content_total / (n_breaks + 1):
                name, minutes = pending.pop(0)
                rows.append((clock, minutes, f"**{name}**"))
                clock += minutes
            teach = fmt.teach_minutes(lesson)
            short = f", shortened from {lesson.minutes}" if teach != lesson.minutes else ""
            if fmt.exercise_in_room(lesson):
                ex = f" + {lesson.exercise_minutes} exercise"
            elif lesson.exercise_minutes:
                ex = "; exercise as homework"
            else:
                ex = ""
            rows.append((clock, slot, f"[{_cell(lesson.number + ' · ' + lesson.title)}](notebooks/{lesson.name}.ipynb) "
                                      f"({teach}{short}{ex})"))
            clock += slot
            content += slot
        rows.append((clock, CLOSING[1], CLOSING[0]))
        days.append(tuple(rows))
    homework = tuple(tuple(x for x in items if x.exercise_minutes and not fmt.exercise_in_room(x))
                     for items in per_day if items)
    return Agenda(fmt, tuple(days), tuple(track[:taken]), tuple(track[taken:]), homework)


def _numbers(items: tuple[Lesson, ...]) -> str:
    return ", ".join(x.number for x in items)


def render_instructor(all_lessons: list[Lesson]) -> str:
    """The instructor guide (agendas, demos, common mistakes, shared-cluster setup)."""
    out = [
        "# Schema Lab: instructor guide", "", GENERATED_NOTE, "",
        "Everything here comes from each notebook's `labkit` metadata (YAML header of `notebooks/src/NN_name.py`):",
        "`minutes` (teaching time, also shown to self-paced learners in [CONTENTS.md](CONTENTS.md)),",
        "`exercise_minutes` (extra room time for the exercise; default 5 when the lesson has a cell tagged",
        f"`{SOLUTION_TAG}`, else 0), `demo` (what to show live) and `mistakes` (what learners commonly get wrong).",
        f"Change the metadata, then run `{REGENERATE}`.", "",
        "## Lessons at a glance", "",
        "| # | Lesson | Section | Teach | Exercise | Slot |", "|---|---|---|---:|---:|---:|",
    ]
    for x in all_lessons:
        out.append(f"| {x.number} | [{_cell(x.title)}](notebooks/{x.name}.ipynb) | {_cell(x.section)} | "
                   f"{x.minutes} | {x.exercise_minutes} | {x.slot_minutes} |")
    out.append(f"| | **Total** | | **{sum(x.minutes for x in all_lessons)}** | "
               f"**{sum(x.exercise_minutes for x in all_lessons)}** | **{sum(x.slot_minutes for x in all_lessons)}** |")
    out += [
        "", "## Agendas", "",
        "Each agenda is planned by one fixed rule (`plan` in `tools/gen_docs.py`), so it changes predictably "
        "when lessons are added:",
        "",
        "1. A format names its lessons (a track, e.g. the anti-patterns 30-39) or takes every lesson in number "
        "order. A format may shorten a lesson's teaching slot (named lessons, or a cap for every lesson: the rest "
        "of the notebook becomes reading) and may make some exercises homework; a lesson's slot is its teaching "
        "minutes plus its exercise minutes when the exercise is done in the room.",
        f"2. Each day opens with {OPENING[1]} minutes of welcome and setup check (later days: {NEXT_DAY_OPENING[1]} "
        f"minutes of recap) and closes with {CLOSING[1]} minutes of wrap-up; the breaks listed for the format are "
        "reserved too.",
        "3. Lessons are taken in the format's order while the next lesson's slot still fits in what is left of "
        "the day; one that does not fit starts the next day, and on the last day it ends the agenda.",
        "4. Breaks are spread evenly over each day: each goes before the first lesson whose midpoint falls past "
        "its share of the day's content. Breaks that would fall after the day's last lesson are dropped.",
        "",
        "Times are offsets from the start (`h:mm`). Spare time at the end is for questions or for letting the "
        "room finish the exercises.",
    ]
    for fmt in FORMATS:
        if not fmt.track(all_lessons):
            continue  # a course without this format's track
        agenda = plan(fmt, all_lessons)
        out += ["", f"### {fmt.title}", ""]
        if fmt.about:
            out += [_md(fmt.about), ""]
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
        room = sum(fmt.slot_minutes(x) for x in agenda.covered)
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
                f"{fmt_minutes(x.minutes)} teaching + {fmt_minutes(x.exercise_minutes)} exercise · "
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
    out += ["", SHARED_CLUSTER]
    out += render_sizing(all_lessons)
    out += ["", WALKTHROUGH, "", PRESENTER_SCRIPT]
    return "\n".join(out) + "\n"


def _footprint_file(all_lessons: list[Lesson]) -> Path | None:
    if not all_lessons:
        return None
    path = all_lessons[0].ipynb.parent.parent / "data" / "workshop_footprint.json"
    return path if path.exists() else None


def render_sizing(all_lessons: list[Lesson]) -> list[str]:
    """The "Sizing the cluster" section: ``workshop plan`` for 30 learners, from the committed measurement."""
    path = _footprint_file(all_lessons)
    if path is None:
        return []
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    from labkit import workshop

    data = workshop.load_footprint(path)
    full = workshop.plan(30, "free", footprint=data)
    out = ["", "## Sizing the cluster", "",
           "Every lesson leaves databases behind until `python -m labkit workshop cleanup`, and some lessons peak "
           "far above what they leave. The numbers below are measured, not estimated: `tools/measure_footprint.py` "
           "runs every lesson on the embedded engine and reads `dbStats` after every cell (cached in "
           "`data/workshop_footprint.json`; `tests/test_workshop_plan.py` fails when a lesson changed since). "
           "Print the same table for your room and tier with "
           "`python -m labkit workshop plan --learners 30 --tier free` (tiers: " + ", ".join(
               f"`{k}`" for k in workshop.TIERS) + "; `--shared` for shared-cluster mode, `--lessons 30,31,...` "
           "for one agenda). Exit status 3 means the room does not fit.", "",
           "Tier limits used (storage counts `dataSize + indexSize`, as Atlas does for Free and Flex clusters):", "",
           "| Tier | Storage MB | Databases | Collections | Collections + indexes (recommended) | Concurrent index builds |",
           "|---|---:|---:|---:|---:|---:|"]
    for t in workshop.TIERS.values():
        def num(v: int) -> str:
            return f"{v:,}" if v else "no limit"
        out.append(f"| {t.title} | {num(t.storage_mb)} | {num(t.databases)} | {num(t.collections)} | "
                   f"{num(t.collections_and_indexes)} | {t.index_builds} |")
    out += ["", "Sources: the Atlas manual (Free cluster limits, Flex limitations, FAQ: Database, FAQ: Storage) and "
                "the server's `maxNumActiveUserIndexBuilds` (default 3: further user index builds on the primary wait; "
                "SERVER-47155). Atlas changes its tiers: check the database and collection caps on the Free and "
                "Flex limitation pages (Operational Limits) before a workshop.", "",
            "### The whole course, 30 learners, Atlas Free", "", workshop.format_plan(full)]
    if data.get("shared_lessons"):
        small = workshop.plan(30, "free", footprint=data, shared=True)
        out += ["", "### With `LABKIT_SHARED=1`", "",
                f"Lessons {', '.join(sorted({fp['lesson'] for fp in data['shared_lessons'].values()}))} scale "
                f"their demonstrations down: one learner peaks at {small['learner']['storage_mb']:.1f} MB "
                f"(instead of {full['learner']['storage_mb']:.1f} MB), {small['learner']['collections']} collections "
                f"(instead of {full['learner']['collections']}) and {small['learner']['indexes']} indexes (instead of "
                f"{full['learner']['indexes']}); the room of 30 needs {small['room']['storage_mb']:,.0f} MB. "
                + ("That fits Atlas Free." if small["fits"] else
                   "That still does not fit Atlas Free: use Flex or M10, or clean up between sections (below).")]
    for fmt in FORMATS:
        if not fmt.lessons or not fmt.track(all_lessons):
            continue
        numbers = [x.number for x in fmt.track(all_lessons)]
        result = workshop.plan(30, "free", footprint=data, lessons=numbers, shared=True)
        over = [c["limit"] for c in result["checks"] if not c["ok"]]
        out += ["", f"{fmt.title}, 30 learners, shared mode, Atlas Free: {result['room']['storage_mb']:,.0f} MB, "
                    f"{result['room']['collections']:,} collections, {result['room']['indexes']:,} indexes"
                    + (f"; over: {', '.join(over)}." if over else "; fits.")]
    return out


WALKTHROUGH = """## A workshop end to end

For a 30-person anti-pattern half day on one cluster (replace the URI; every command takes `--uri` instead):

1. **A week before: size it.** `python -m labkit workshop plan --learners 30 --tier free --shared --lessons
   30,31,32,35,37,38,39`. If it says DOES NOT FIT, pick the tier it fits (`--tier flex`, `--tier m10`) or
   fewer learners per cluster.
2. **The day before: seat everyone.** `export MONGODB_URI="mongodb+srv://USER:PASSWORD@cluster.example.net"`,
   then `python -m labkit workshop prepare --learners 30`. It proves the credentials and the quota by creating and
   seeding `sl_learner01_ready` ... `sl_learner30_ready`, and prints the line each learner runs:
   `MONGODB_URI=... LABKIT_DB_PREFIX=sl_learnerNN_ LABKIT_SHARED=1 python3 dev.py lab`.
3. **Doors open: check.** Everyone runs `python -m labkit doctor`; you run
   `python -m labkit workshop check --learners 30` until it exits 0 (every seat ready). Put the agenda from
   [Agendas](#agendas) on screen.
4. **During exercises: watch.** `python -m labkit workshop progress --learners 30` in a terminal, or
   `labkit.workshop.progress_widget(labkit.connect(), 30)` in a notebook on the projector: a column where most
   of the room is *attempted* is the exercise to walk through together.
5. **Live demos.** Open `notebooks/demo_dashboard.ipynb` and follow the [presenter script](#live-demo-presenter-script).
6. **Afterwards: clean up.** `python -m labkit workshop cleanup` drops every labkit-marked `sl_learnerNN_...`
   database and lists, untouched, any matching database labkit did not create.

The same commands work against `python -m labkit serve` (the embedded engine served over the wire) for a
rehearsal without a cluster."""

PRESENTER_SCRIPT = """## Live demo: presenter script

`notebooks/demo_dashboard.ipynb` has two panels. Each shows numbers and, under them, a **takeaway** line computed
from those numbers: read it out, then point at the number it names.

1. **Posts by the busiest author** (slider: posts by one author). Start at 20,000: embedded posts are already
   about an eighth of 16 MiB, `postIds` a fraction of that, child references 187 bytes. Drag to 165,000 and
   then 200,000: the takeaway turns to "past the 16 MiB limit ... every write to this user fails". The point:
   the parent-side array is bounded by the busiest author, not the average one; the child reference does not
   grow at all (lessons 02, 11, 32).
2. **Feed query plan** (rank of the author, index). With *no index*, every post of the collection is read and
   sorted in memory, whoever the author. With `{authorId: 1}`, rank 1 (5,000 posts) fetches and sorts all of
   them to return 20, rank 150 only a handful: the cost grows with the author. With
   `{authorId: 1, createdAt: -1, _id: -1}` the takeaway reads "20 keys and 20 documents examined, whether the
   author has 5,000 posts or a million": equality, then sort, and the limit stops the scan (lessons 02, 03, 35)."""

SHARED_CLUSTER = """## Running the workshop on a shared cluster

Learners can work entirely on the embedded engine (no server, nothing to set up). To have everyone use one
real cluster instead:

1. **Point everyone at the cluster.** Each learner starts JupyterLab with the URI set, e.g.
   `MONGODB_URI="mongodb+srv://USER:PASSWORD@cluster.example.net" python3 dev.py lab`. labkit pings the server
   first and fails within 3 seconds with a `LabConnectionError` naming the host if it does not answer; passwords
   are always shown redacted. Have everyone run `python -m labkit doctor` first: it reports versions, the engine,
   whether the server answers and whether widgets render.
2. **Size the room.** `python -m labkit workshop plan --learners 30 --tier free --shared` prints the measured
   footprint per lesson and for the room against the tier's limits (see [Sizing the cluster](#sizing-the-cluster)).
3. **Give every learner a seat.** Workshop mode numbers the learners and gives learner *k* the database
   prefix `sl_learnerKK_`. Before the workshop, with `MONGODB_URI` set to the cluster:
   `python -m labkit workshop prepare --learners 30` creates and seeds one marked database per learner
   (`sl_learner01_ready` ...) and prints the `LABKIT_DB_PREFIX` each learner must set, with `LABKIT_SHARED=1`. It refuses, before writing
   anything, if a database of the same name exists that labkit did not create. `--base NAME` changes the
   `sl_learner` part; `--users N` the size of the seeded data (0 for none).
4. **Learners set their prefix.** Learner 7 starts JupyterLab with
   `MONGODB_URI=... LABKIT_DB_PREFIX=sl_learner07_ LABKIT_SHARED=1 python3 dev.py lab`; every
   `labkit.fresh_db("02_one_to_many")` then creates `sl_learner07_02_one_to_many`, so nobody touches anybody
   else's data. (Without workshop mode, the prefix defaults to `sl_<OS user name>_`.) `LABKIT_SHARED=1` is
   shared-cluster mode: lesson 34 creates 60 per-tenant collections instead of 300, lesson 31 grows its 16 MiB
   document in the embedded engine on the learner's machine (same limit, same error code), and bursts of index
   builds pause between builds so the room does not queue behind the primary's 3 build slots at once. Each
   lesson prints what it scaled; the conclusions are the same.
5. **Check readiness.** `python -m labkit workshop check --learners 30` lists every seat as ready or not, with
   the number of databases each learner has so far, and exits non-zero while any seat is missing.
6. **Watch the room.** `python -m labkit workshop progress --learners 30` prints learner by exercise (✔ passed,
   … attempted, · not started) from each learner's `sl_learnerNN_progress` database, which every `ex.check(...)`
   updates; in a notebook, `labkit.workshop.progress_widget(client, 30)` shows the same as a coloured grid that
   refreshes every 30 seconds and on its Refresh button.
7. **Clean up afterwards.** `python -m labkit workshop cleanup` drops every labkit-marked database of the
   workshop (`sl_learnerNN_...`) and lists, untouched, any matching database labkit did not create.
   `python -m labkit reset NAME` drops a single labkit database.

Every `python -m labkit` command takes `--uri` and `--help`."""


# --- everything together -----------------------------------------------------------------------------------

def expected_files(root: Path = ROOT) -> dict[Path, str]:
    """Every generated file under ``root`` and the text it should have (computed in memory)."""
    root = Path(root)
    all_lessons = lessons(root / "notebooks")
    files: dict[Path, str] = {
        root / "CONTENTS.md": render_contents(all_lessons),
        root / "INSTRUCTOR.md": render_instructor(all_lessons),
    }
    student_rows: list[tuple[Lesson, int]] = []
    for i, lesson in enumerate(all_lessons):
        nav, cited = navigation_markdown(all_lessons, i), sources_markdown(lesson)
        files[lesson.source] = py_with_navigation(lesson.source.read_text(encoding="utf-8"), nav, cited)
        if lesson.ipynb.exists():
            nb_text = ipynb_with_navigation(lesson.ipynb.read_text(encoding="utf-8"), nav, cited)
            files[lesson.ipynb] = nb_text
            student_text, blanked = student_notebook(nb_text)
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
