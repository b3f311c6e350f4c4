"""Shared by the lesson-method tests (issue 25): the lessons, their cells, and the shrinking KNOWN lists.

Each lesson-method test (tests/test_lesson_sources.py, tests/test_markdown_numbers.py, tests/test_one_cost.py)
computes a list of problems per lesson. A lesson named in the test's ``KNOWN`` dict (lesson -> why it does
not pass yet) must still have a problem: once it passes, the test fails and asks for the entry to be removed,
so the list only shrinks. Every other lesson must have none.

Each such test module is also a command that prints the problems, for the people fixing the lessons::

    python tests/test_lesson_sources.py 04_follows 08_capstone_profile
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable, Iterable, Mapping

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import notebook_meta  # noqa: E402

LESSONS = notebook_meta.lessons(ROOT / "notebooks")
LESSON_NAMES = [x.name for x in LESSONS]
GENERATED_TAGS = (notebook_meta.SOURCES_TAG, notebook_meta.NAVIGATION_TAG)


def lesson_source(name: str) -> Path:
    """The py:percent source of lesson ``name``."""
    return next(x.source for x in LESSONS if x.name == name)


def text(value: object) -> str:
    """A notebook field (a string or a list of lines) as one string."""
    return "".join(value) if isinstance(value, list) else (value or "")  # type: ignore[arg-type]


def tags(cell: Mapping) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def authored_markdown(nb: Mapping) -> list[str]:
    """The markdown cells a lesson's author wrote (the generated sources and navigation cells left out)."""
    return [text(c["source"]) for c in nb["cells"]
            if c["cell_type"] == "markdown" and not set(tags(c)) & set(GENERATED_TAGS)]


def by_name(problems_of: Callable[[Path], list[str]]) -> Callable[[str], list[str]]:
    """A check on a lesson's source file, called with the lesson's name (for the tests and :func:`main`)."""
    return lambda name: problems_of(lesson_source(name))


def assert_known(name: str, problems: list[str], known: Mapping[str, str], test_file: str) -> None:
    """No problems, or (for a lesson in ``known``) still at least one; messages say what to do."""
    if name in known:
        assert problems, (f"{name} passes now: remove it from KNOWN in {test_file} (the list only shrinks). "
                          f"It was listed because: {known[name]}")
        return
    listing = "\n".join(f"  - {p}" for p in problems)
    assert not problems, f"{name}: {len(problems)} problem(s) ({test_file}):\n{listing}"


def assert_known_names(known: Mapping[str, str], names: Iterable[str] = LESSON_NAMES) -> None:
    stray = sorted(set(known) - set(names))
    assert not stray, f"KNOWN names lessons that do not exist: {stray}"


def lesson_tests(problems: Callable[[str], list[str]], known: Mapping[str, str],
                 test_file: str) -> tuple[Callable[[], None], Callable[[str], None]]:
    """The two tests of a lesson-method rule: ``known`` names only lessons, and every lesson has no problems
    (or, when in ``known``, still has one). Assign them to ``test_...`` names in the test module."""
    import pytest

    def known_lists_only_lessons() -> None:
        assert_known_names(known)

    @pytest.mark.parametrize("name", LESSON_NAMES)
    def every_lesson(name: str) -> None:
        assert_known(name, problems(name), known, test_file)

    return known_lists_only_lessons, every_lesson


def main(argv: list[str], problems: Callable[[str], list[str]], known: Mapping[str, str],
         names: Iterable[str] = LESSON_NAMES) -> int:
    """Print each named lesson's problems (all lessons when none is named); exit 1 when any has problems."""
    chosen = [n for n in names if not argv or any(n == a or n.startswith(a) for a in argv)]
    bad = 0
    for name in chosen:
        found = problems(name)
        bad += bool(found)
        flag = " (in KNOWN)" if name in known else ""
        print(f"{name}: {len(found)} problem(s){flag}" if found else f"{name}: ok{flag}")
        for p in found:
            print(f"  - {p}")
    return 1 if bad else 0


def sentence_split(prose: str) -> list[str]:
    """Sentences (and list items, paragraphs, table rows) of markdown prose."""
    return [s for s in re.split(r"(?<=[.!?;])\s+(?=[A-Z(\[*_`])|\n\s*[-*]\s+|\n\s*\d+\.\s+|\n\n|\n(?=\s*\|)", prose)
            if s.strip()]
