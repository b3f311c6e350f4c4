"""Every lesson source notebooks/src/NN_*.py has its built notebooks/NN_*.ipynb and vice versa, with identical cells.

Compares cell types, sources and tags as jupytext reads them (outputs and execution counts are ignored).
A mismatch means the .ipynb was not rebuilt after the source changed: `python3 dev.py build-notebooks NAME`.
"""
from __future__ import annotations

from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOURCES = NOTEBOOKS / "src"  # jupytext pairs notebooks/NN.ipynb with notebooks/src/NN.py
STEMS = sorted({p.stem for p in SOURCES.glob("[0-9][0-9]_*.py")} | {p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")})


def cells(path: Path) -> list[tuple[str, str, list[str]]]:
    """(type, source, tags) of every cell of a notebook in any jupytext format."""
    nb = jupytext.read(path)
    return [(c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in nb.cells]


def first_difference(a: list, b: list) -> str:
    """Where two cell lists first differ, for the failure message."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            what = "type" if x[0] != y[0] else "source" if x[1] != y[1] else "tags"
            return f"cell {i} differs in {what}: source has {x[1][:80]!r} {x[2]}, notebook has {y[1][:80]!r} {y[2]}"
    return f"the source has {len(a)} cells, the notebook {len(b)}"


def test_there_are_lessons():
    assert STEMS, f"no notebooks/src/NN_*.py found in {SOURCES}"


@pytest.mark.parametrize("stem", STEMS)
def test_source_and_notebook_are_paired(stem: str):
    src, nb = SOURCES / f"{stem}.py", NOTEBOOKS / f"{stem}.ipynb"
    if not src.exists():
        pytest.fail(f"notebooks/{stem}.ipynb has no source notebooks/src/{stem}.py: the .py is what is edited; "
                    f"restore it (`jupytext --to src//py:percent notebooks/{stem}.ipynb`) or delete the notebook")
    if not nb.exists():
        pytest.fail(f"notebooks/src/{stem}.py has not been built: run `python3 dev.py build-notebooks {stem}`")
    a, b = cells(src), cells(nb)
    assert a == b, (f"notebooks/{stem}.ipynb is out of date with notebooks/src/{stem}.py ({first_difference(a, b)}); "
                    f"run `python3 dev.py build-notebooks {stem}`")


def test_the_comparison_sees_source_changes(tmp_path: Path):
    src = tmp_path / "05_demo.py"
    src.write_text('# %% [markdown]\n# # Demo\n\n# %% tags=["solution"]\nx = 1\n')
    jupytext.write(jupytext.read(src), tmp_path / "05_demo.ipynb")
    assert cells(src) == cells(tmp_path / "05_demo.ipynb")
    src.write_text('# %% [markdown]\n# # Demo\n\n# %%\nx = 1\n')
    a, b = cells(src), cells(tmp_path / "05_demo.ipynb")
    assert a != b and "cell 1 differs in tags" in first_difference(a, b)
