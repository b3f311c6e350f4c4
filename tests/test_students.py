"""Student copies give nothing away (issue 15): no solution code, no passing check, no output that lists answers."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import labkit

ROOT = Path(__file__).resolve().parents[1]
STUDENTS = sorted((ROOT / "students").glob("*.ipynb"))


def _outputs_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append("".join(out["text"]) if isinstance(out["text"], list) else out["text"])
        for mime in ("text/plain", "text/markdown", "text/html"):
            data = out.get("data", {}).get(mime)
            if data:
                parts.append("".join(data) if isinstance(data, list) else data)
    return "\n".join(parts)


def _solution_lines() -> dict[str, list[str]]:
    """Each exercise's solution code lines that are specific enough to count as giving it away."""
    out = {}
    for ex_id in labkit.exercises.ids():
        text = labkit.exercises.get(ex_id).solution_text
        lines = [ln.strip() for ln in text.splitlines()
                 if len(ln.strip()) >= 30 and not ln.strip().startswith(("ex.check", "#", "def "))]
        out[ex_id] = lines
    return out


def test_there_is_a_student_copy_per_lesson():
    assert len(STUDENTS) >= 30


@pytest.mark.parametrize("path", STUDENTS, ids=lambda p: p.stem)
def test_student_copy_gives_nothing_away(path):
    nb = json.loads(path.read_text())
    lesson = path.stem
    own = [ex_id for ex_id in labkit.exercises.ids() if labkit.exercises.get(ex_id).lesson == lesson]
    solutions = _solution_lines()
    for i, cell in enumerate(nb["cells"]):
        tags = cell.get("metadata", {}).get("tags", [])
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        text = _outputs_text(cell)
        if "solution" in tags:
            assert not cell.get("outputs"), f"{lesson} cell {i}: a blanked solution cell kept its output"
            assert not any(ln in source for ex_id in own for ln in solutions[ex_id]), f"{lesson} cell {i}"
        assert "Correct!" not in text, f"{lesson} cell {i} shows a passing check: {text[:200]!r}"
        for ex_id in own:
            leaked = [ln for ln in solutions[ex_id] if ln in text]
            assert not leaked, f"{lesson} cell {i} shows the solution of {ex_id}: {leaked[0]!r}"


def test_the_quiz_answers_appear_in_no_student_output():
    """Lesson 20's worked attempt and hint used to list the quiz's answers."""
    from labkit.exercises.patterns import _EXPECTED
    nb = json.loads((ROOT / "students" / "20_which_pattern.ipynb").read_text())
    for i, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        text = (_outputs_text(cell) + "\n" + source).lower()
        named = {scenario for scenario, pattern in _EXPECTED.items()
                 if f"{scenario}: {pattern}" in text or f"'{scenario}': '{pattern}'" in text
                 or f'"{scenario}": "{pattern}"' in text or f"expected {pattern}" in text}
        assert not named, f"cell {i} gives away {sorted(named)}"
    for hint in labkit.exercises.get("20-which-pattern").hints:
        assert sum(p in hint.lower() for p in set(_EXPECTED.values())) < 3, hint
