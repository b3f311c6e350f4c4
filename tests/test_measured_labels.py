""""Measured" only for what ran; "estimated" says how (issue 25, part 3; LESSON_CONVENTIONS.md, "Figures").

The label comes with the figure, by construction: labkit prints "measured" only next to figures it got from a
run (``labkit.Ledger``: ``per_operation()``'s ``cost`` column; ``labkit.ledger.measure``/``compare``), and a
formula enters as ``labkit.ledger.estimate(how=...)`` / ``Ledger.estimate(...)`` and is printed
"estimated: <how>"; per-second totals are "estimated: rate x measured cost per run" (tests/test_ledger.py
tests those labels). This test holds the lessons to it, for each ``notebooks/src/NN_name.py``:

1. No string in a lesson's code says "measured" (comments and docstrings are not printed): a lesson never
   labels a figure measured itself, it lets labkit do it. (A name such as ``measured(...)`` is code, not a
   label.)
2. Every "estimated" in a string of the code says how: "estimated: docs examined x avgObjSize" or
   "estimated (docs examined x avgObjSize)".

The markdown is the lesson engineers' to keep true (a heuristic "is there a run in this section" flagged the
summaries that recall figures measured above, and missed formulas next to a query, so it is not a test); the
figures test (tests/test_markdown_numbers.py) and the plan record (tests/test_one_cost.py) check the figures.

Lessons not done yet are in :data:`KNOWN` (the list only shrinks); ``python tests/test_measured_labels.py
[lesson ...]`` prints the problems.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import jupytext

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson_checks import by_name, lesson_tests, main  # noqa: E402

#: lesson -> why it does not pass yet (remove the entry when it does; the test says so)
KNOWN: dict[str, str] = {}

MEASURED = re.compile(r"\bmeasured\b", re.IGNORECASE)
ESTIMATED_WITHOUT_HOW = re.compile(r"\bestimated\b(?!\s*(?::|\(|—|-)\s*\S)", re.IGNORECASE)


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string constant in ``tree`` except docstrings."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.add(id(first.value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def _parse(source: str) -> ast.AST | None:
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]  # IPython magics
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def problems_of(path: Path) -> list[str]:
    """What the lesson whose source is ``path`` labels wrongly (empty when nothing)."""
    nb = jupytext.read(path)
    trees = [_parse(c.source) for c in nb.cells if c.cell_type == "code"]
    found = []
    for number, tree in enumerate(trees):
        if tree is None:
            continue
        for line, text in _strings(tree):
            where = f"code cell {number}, line {line}"
            if MEASURED.search(text):
                found.append(f"{where}: the lesson labels something measured itself ({text.strip()[:80]!r}); let "
                             "labkit label what it ran (Ledger, labkit.ledger.measure/compare), or say "
                             "'estimated: <how>'")
            if ESTIMATED_WITHOUT_HOW.search(text):
                found.append(f"{where}: 'estimated' without how ({text.strip()[:80]!r}); write 'estimated: <how>'")
    return found


problems = by_name(problems_of)
test_known_lists_only_lessons, test_measured_only_for_what_ran_and_estimates_say_how = lesson_tests(problems, KNOWN, "tests/test_measured_labels.py")


# --- the rule itself, on throw-away lessons ------------------------------------------------------------------

def _lesson(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "09_t.py"
    path.write_text("# ---\n# jupyter:\n#   labkit:\n#     minutes: 5\n#     title: T\n#     section: S\n# ---\n" + body)
    return path


def test_a_lesson_that_types_measured_fails_and_labkit_labels_pass(tmp_path):
    typed = '# %%\ncompare = {"bytes loaded (measured)": docs * size}\n'
    assert "labels something measured itself" in problems_of(_lesson(tmp_path, typed))[0]
    labkit_labels = ('# %%\n"""Measured on a fresh product (a docstring is not printed)."""\n'
                     '# measured below (a comment)\nplan = labkit.ledger.compare({"a": labkit.ledger.measure(db, f)})\n'
                     'reading = measured(lambda: 1, data=db)\n')
    assert problems_of(_lesson(tmp_path, labkit_labels)) == []


def test_an_estimate_must_say_how(tmp_path):
    assert "'estimated' without how" in problems_of(_lesson(tmp_path, '# %%\nlabel = "bytes (estimated)"\n'))[0]
    for ok in ('"bytes (estimated: docs examined x avgObjSize)"', '"estimated (rate x cost)"'):
        assert problems_of(_lesson(tmp_path, f"# %%\nlabel = {ok}\n")) == [], ok


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], problems, KNOWN))
