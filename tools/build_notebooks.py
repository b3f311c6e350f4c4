#!/usr/bin/env python3
"""Regenerate every notebook (or the named ones) from its py:percent source, with outputs.

    python3 dev.py build-notebooks                 # all of notebooks/src/*.py
    python3 dev.py build-notebooks 00_start_here   # just one

One executor only (nbclient), on the embedded engine, so stored outputs are what nbval compares.
Afterwards tools/gen_docs.py refreshes the navigation cells, CONTENTS.md, INSTRUCTOR.md and students/.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

import notebook_meta

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOURCES = NOTEBOOKS / "src"  # the py:percent sources (jupytext formats "ipynb,src//py:percent")
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def sources(names: list[str]) -> list[Path]:
    """The py:percent sources to build, in lesson order."""
    all_src = sorted(SOURCES.glob("[0-9][0-9]_*.py")) + sorted(SOURCES.glob("demo_*.py"))
    return notebook_meta.select(all_src, names, f"notebook source in {SOURCES}")


def build(src: Path) -> Path:
    """Execute ``src`` and write the paired ``.ipynb`` in ``notebooks/`` (one folder up from the source)."""
    nb = jupytext.read(src)
    nb.metadata["kernelspec"] = KERNEL
    nb.metadata.setdefault("jupytext", {})["formats"] = "ipynb,src//py:percent"
    nb.metadata["jupytext"].pop("text_representation", None)
    nb.metadata["language_info"] = {"name": "python"}
    client = NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}},
        record_timing=False, store_widget_state=True,
    )
    client.execute()
    nb.metadata["language_info"] = {"name": "python"}
    out = NOTEBOOKS / (src.stem + ".ipynb")
    nbformat.write(nb, out)
    return out


def main(argv: list[str]) -> int:
    os.environ.pop("MONGODB_URI", None)
    os.environ.pop("LABKIT_DB_PREFIX", None)
    os.environ["PYTHONHASHSEED"] = "0"
    for src in sources(argv):
        start = time.monotonic()
        out = build(src)
        print(f"built {out.relative_to(ROOT)} in {time.monotonic() - start:.1f} s", flush=True)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import gen_docs  # navigation cells, CONTENTS.md, INSTRUCTOR.md and students/ follow the new notebooks

    for path in gen_docs.write_all():
        print(f"updated {path.relative_to(ROOT)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
