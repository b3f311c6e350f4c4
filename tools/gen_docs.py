#!/usr/bin/env python3
"""Generate Schema Lab's navigation and course documents from the notebooks' ``labkit`` metadata.

    python3 tools/gen_docs.py           # (re)write everything below
    python3 tools/gen_docs.py --check   # write nothing; list stale files, exit 1 if any

What it writes (all derived; never edit by hand):

- ``CONTENTS.md``: lessons per section with number, title, minutes, link, and minutes per section;
- a final markdown cell tagged ``navigation`` ("← previous · contents · next →") in every
  ``notebooks/NN_*.py``, and the same cell in the paired ``.ipynb`` when it exists (a markdown cell has no
  outputs, so no re-execution is needed; ``python3 dev.py build-notebooks`` carries it over as well);
- ``students/NN_name.ipynb``: each built notebook with every cell tagged ``solution`` replaced by an empty
  code cell ``# Your answer here`` (tags kept, outputs of those cells dropped), plus ``students/README.md``;
- ``INSTRUCTOR.md``: workshop agendas (90-minute taster, half day, full day), what to demo live, common
  mistakes per lesson, and how to run on a shared cluster.

``tests/test_docs_fresh.py`` regenerates all of this in memory and fails when a file on disk differs.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

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
from notebook_meta import NAVIGATION_TAG, REVEAL_TAG, ROOT, SOLUTION_TAG, Lesson, lessons, sections  # noqa: E402

REGENERATE = "python3 tools/gen_docs.py"
GENERATED_NOTE = f"<!-- Generated from the notebooks' `labkit` metadata by `{REGENERATE}`. Do not edit by hand. -->"
STUDENT_PLACEHOLDER = "# Your answer here"
CELL_MARKER = re.compile(r"^# %%")
NAV_MARKER = re.compile(r"^# %%.*\btags=\[[^\]]*[\"']" + NAVIGATION_TAG + r"[\"']")


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


def py_with_navigation(text: str, nav: str) -> str:
    """py:percent source ``text`` with its ``navigation`` cell removed and ``nav`` appended as the last cell."""
    lines = text.splitlines()
    kept: list[str] = []
    skipping = False
    for line in lines:
        if CELL_MARKER.match(line):
            skipping = bool(NAV_MARKER.match(line))
        if not skipping:
            kept.append(line)
    body = "\n".join(kept).rstrip("\n")
    commented = "\n".join(f"# {ln}" if ln else "#" for ln in nav.splitlines())
    return f'{body}\n\n# %% [markdown] tags=["{NAVIGATION_TAG}"]\n{commented}\n'


def ipynb_with_navigation(text: str, nav: str) -> str:
    """Notebook JSON ``text`` with its last cell being the ``navigation`` markdown ``nav``.

    Returns ``text`` unchanged when that is already so, to keep the stored file byte-identical."""
    nb = nbformat.reads(text, as_version=4)
    is_nav = [NAVIGATION_TAG in c.get("metadata", {}).get("tags", []) for c in nb.cells]
    if nb.cells and is_nav[-1] and is_nav.count(True) == 1 and nb.cells[-1].source == nav \
            and nb.cells[-1].cell_type == "markdown":
        return text
    old = [c for c, flag in zip(nb.cells, is_nav) if flag]
    nb.cells = [c for c, flag in zip(nb.cells, is_nav) if not flag]
    cell = nbformat.v4.new_markdown_cell(nav, metadata={"tags": [NAVIGATION_TAG]})
    if nb.nbformat_minor >= 5:
        cell["id"] = old[0].get("id", NAVIGATION_TAG) if old else NAVIGATION_TAG
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
    """A workshop format: total length and the breaks it contains (in order)."""

    key: str
    title: str
    total: int
    breaks: tuple[tuple[str, int], ...]


FORMATS = (
    Format("taster", "90-minute taster", 90, ()),
    Format("half-day", "Half day (3.5 h)", 210, (("Break", 15),)),
    Format("full-day", "Full day (6.5 h)", 390, (("Break", 15), ("Lunch", 45), ("Break", 15))),
)
OPENING = ("Welcome; everyone runs `python -m labkit doctor` and opens the first notebook", 10)
CLOSING = ("Wrap-up and questions", 5)


@dataclass(frozen=True)
class Agenda:
    """A planned session: rows of (start, minutes, item), the lessons covered and the lessons left out."""

    format: Format
    rows: tuple[tuple[int, int, str], ...]
    covered: tuple[Lesson, ...]
    left_out: tuple[Lesson, ...]

    @property
    def end(self) -> int:
        """Minutes from the start to the end of the last row."""
        return self.rows[-1][0] + self.rows[-1][1] if self.rows else 0


def plan(fmt: Format, all_lessons: list[Lesson]) -> Agenda:
    """Plan ``fmt`` deterministically.

    1. Content budget = total - opening - closing - all breaks.
    2. Take lessons in number order (so sections stay in order) while the next lesson's slot
       (``minutes + exercise_minutes``) still fits; the first that does not fit ends the list.
    3. Spread the breaks evenly: break k of n goes before the first lesson whose midpoint falls after
       k/(n+1) of the covered content. Breaks that would fall after the last lesson are dropped.
    """
    budget = fmt.total - OPENING[1] - CLOSING[1] - sum(m for _, m in fmt.breaks)
    covered: list[Lesson] = []
    used = 0
    for lesson in all_lessons:
        if used + lesson.slot_minutes > budget:
            break
        covered.append(lesson)
        used += lesson.slot_minutes
    rows: list[tuple[int, int, str]] = [(0, OPENING[1], OPENING[0])]
    clock, content, pending = OPENING[1], 0, list(fmt.breaks)
    n_breaks = len(fmt.breaks)
    for lesson in covered:
        done = n_breaks - len(pending)
        if pending and content > 0 and content + lesson.slot_minutes / 2 > (done + 1) * used / (n_breaks + 1):
            name, minutes = pending.pop(0)
            rows.append((clock, minutes, f"**{name}**"))
            clock += minutes
        ex = f" + {lesson.exercise_minutes} exercise" if lesson.exercise_minutes else ""
        rows.append((clock, lesson.slot_minutes,
                     f"[{_cell(lesson.number + ' · ' + lesson.title)}](notebooks/{lesson.name}.ipynb) ({lesson.minutes}{ex})"))
        clock += lesson.slot_minutes
        content += lesson.slot_minutes
    rows.append((clock, CLOSING[1], CLOSING[0]))
    return Agenda(fmt, tuple(rows), tuple(covered), tuple(all_lessons[len(covered):]))


def _numbers(items: tuple[Lesson, ...]) -> str:
    return ", ".join(x.number for x in items)


def render_instructor(all_lessons: list[Lesson]) -> str:
    """The instructor guide (agendas, demos, common mistakes, shared-cluster setup)."""
    out = [
        "# Schema Lab: instructor guide", "", GENERATED_NOTE, "",
        "Everything here comes from each notebook's `labkit` metadata (YAML header of `notebooks/NN_name.py`):",
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
        "Each agenda is planned by one fixed rule, so it changes predictably when lessons are added:",
        "",
        f"1. It opens with {OPENING[1]} minutes of welcome and setup check and closes with {CLOSING[1]} minutes of "
        "wrap-up; the breaks listed for the format are reserved too.",
        "2. Lessons are taken in number order (sections stay in order) while the next lesson's slot "
        "(teach + exercise) still fits in what is left; the first lesson that does not fit ends the agenda.",
        "3. Breaks are spread evenly: each goes before the first lesson whose midpoint falls past its share of the "
        "covered content. Breaks that would fall after the last lesson are dropped.",
        "",
        "Times are offsets from the start (`h:mm`). Spare time at the end is for questions or for letting the "
        "room finish the exercises.",
    ]
    for fmt in FORMATS:
        agenda = plan(fmt, all_lessons)
        out += ["", f"### {fmt.title}", "", "| Time | Minutes | Item |", "|---|---:|---|"]
        for start, minutes, item in agenda.rows:
            out.append(f"| {fmt_clock(start)}–{fmt_clock(start + minutes)} | {minutes} | {item} |")
        spare = fmt.total - agenda.end
        out += ["", f"Covers {len(agenda.covered)} of {len(all_lessons)} lessons and ends at "
                    f"{fmt_clock(agenda.end)}; {spare} min spare."]
        if agenda.left_out:
            out.append(f"Not covered (self-study afterwards): {_numbers(agenda.left_out)}.")
    out += ["", "## Per lesson: demo live, common mistakes"]
    for x in all_lessons:
        src = f"notebooks/{x.name}.py"
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
    return "\n".join(out) + "\n"


SHARED_CLUSTER = """## Running the workshop on a shared cluster

Learners can work entirely on the embedded engine (no server, nothing to set up). To have everyone use one
real cluster instead:

1. **Point everyone at the cluster.** Each learner starts JupyterLab with the URI set, e.g.
   `MONGODB_URI="mongodb+srv://USER:PASSWORD@cluster.example.net" python3 dev.py lab`. labkit pings the server
   first and fails within 3 seconds with a `LabConnectionError` naming the host if it does not answer; passwords
   are always shown redacted. Have everyone run `python -m labkit doctor` first: it reports versions, the engine,
   whether the server answers and whether widgets render.
2. **Give every learner a seat.** Workshop mode numbers the learners and gives learner *k* the database
   prefix `sl_learnerKK_`. Before the workshop, with `MONGODB_URI` set to the cluster:
   `python -m labkit workshop prepare --learners 30` creates and seeds one marked database per learner
   (`sl_learner01_ready` ...) and prints the `LABKIT_DB_PREFIX` each learner must set. It refuses, before writing
   anything, if a database of the same name exists that labkit did not create. `--base NAME` changes the
   `sl_learner` part; `--users N` the size of the seeded data (0 for none).
3. **Learners set their prefix.** Learner 7 starts JupyterLab with
   `MONGODB_URI=... LABKIT_DB_PREFIX=sl_learner07_ python3 dev.py lab`; every `labkit.fresh_db("02_one_to_many")`
   then creates `sl_learner07_02_one_to_many`, so nobody touches anybody else's data. (Without workshop mode,
   the prefix defaults to `sl_<OS user name>_`.)
4. **Check readiness.** `python -m labkit workshop check --learners 30` lists every seat as ready or not, with
   the number of databases each learner has so far, and exits non-zero while any seat is missing.
5. **Clean up afterwards.** `python -m labkit workshop cleanup` drops every labkit-marked database of the
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
        nav = navigation_markdown(all_lessons, i)
        files[lesson.source] = py_with_navigation(lesson.source.read_text(encoding="utf-8"), nav)
        if lesson.ipynb.exists():
            nb_text = ipynb_with_navigation(lesson.ipynb.read_text(encoding="utf-8"), nav)
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
