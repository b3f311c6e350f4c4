#!/usr/bin/env python3
"""Run every notebook top to bottom against the served engine, as a learner on a real server would.

    python tools/run_notebooks_served.py                  # all notebooks
    python tools/run_notebooks_served.py 07_validation    # just one (a name or a prefix of one)
    python tools/run_notebooks_served.py --uri mongodb://host:27017   # against a server you started

Starts ``labkit.engine.transport.wire.serve_in_thread`` on loopback (unless ``--uri`` is given), then executes each
notebook in its own kernel (nbclient) with ``MONGODB_URI`` pointing at it and a learner prefix
(``LABKIT_DB_PREFIX``), so labkit takes its real-server path: pymongo over TCP, ``_labkit`` marker collections,
prefixed database names. Stored outputs are neither compared nor written (nbval does that on the embedded
engine); any cell error fails the run, naming the notebook and the cell. tests/test_notebooks_served.py runs
the same thing per notebook under pytest.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import time
from pathlib import Path
from typing import Iterator

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when a test loads this file by its path
from notebook_meta import select  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
DEFAULT_PREFIX = "sl_served_"
CELL_TIMEOUT_S = 600
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class NotebookRunError(RuntimeError):
    """A notebook failed against the served engine; the message names the notebook and the cell."""


def notebooks(names: list[str] | None = None) -> list[Path]:
    """The lesson and demo notebooks to run, in lesson order (all of them when ``names`` is empty)."""
    every = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) + sorted(NOTEBOOKS.glob("demo_*.ipynb"))
    return select(every, names, f"notebook in {NOTEBOOKS}")


def _kernel_env(uri: str, prefix: str) -> dict[str, str]:
    env = dict(os.environ)
    env["MONGODB_URI"] = uri
    env["LABKIT_DB_PREFIX"] = prefix
    env.setdefault("PYTHONHASHSEED", "0")
    env["MPLBACKEND"] = "Agg"
    # The kernel imports labkit from this checkout, whatever is installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    return env


def _first_line(source: str) -> str:
    for line in source.splitlines():
        if line.strip():
            return line.strip()[:100]
    return "(empty cell)"


def run_notebook(path: Path, uri: str, prefix: str = DEFAULT_PREFIX, timeout: int = CELL_TIMEOUT_S) -> float:
    """Execute ``path`` in a fresh kernel with ``MONGODB_URI=uri``; return the seconds it took.

    Raises :class:`NotebookRunError` naming the notebook and the failing cell (its number among the code
    cells, counting from 1, and its first line) with the error the kernel reported.
    """
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
        record_timing=False, allow_errors=False,
    )
    # nbclient keeps the index of the cell it is executing; read it on failure to name the cell.
    current = {"index": None}
    original = client.async_execute_cell

    async def tracking(cell, cell_index, *args, **kwargs):
        current["index"] = cell_index
        return await original(cell, cell_index, *args, **kwargs)

    client.async_execute_cell = tracking
    start = time.monotonic()
    try:
        client.execute(env=_kernel_env(uri, prefix))
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        index = current["index"]
        if index is None:
            where = "before the first cell"
        else:
            number = code_cells.index(index) + 1 if index in code_cells else index
            where = f"code cell {number} (cell {index} of the notebook): {_first_line(nb.cells[index].source)!r}"
        detail = _ANSI.sub("", str(exc))
        if isinstance(exc, CellExecutionError) and exc.ename:
            detail = f"{exc.ename}: {exc.evalue}\n{_tail(detail)}"
        raise NotebookRunError(f"{path.name} failed against {uri} at {where}\n{detail}") from None
    return time.monotonic() - start


def _tail(text: str, lines: int = 25) -> str:
    parts = text.rstrip().splitlines()
    return "\n".join(parts[-lines:])


@contextlib.contextmanager
def served(uri: str | None = None) -> Iterator[str]:
    """Yield ``uri``, or the URI of a served engine started on loopback for the duration."""
    if uri:
        yield uri
        return
    from labkit.engine.transport.wire import serve_in_thread

    with serve_in_thread(host="127.0.0.1", port=0) as server:
        yield server.uri


def main(argv: list[str] | None = None) -> int:
    """Command line: run the named notebooks (default all) against the served engine; 1 on any failure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="notebook names or prefixes (default: all)")
    parser.add_argument("--uri", help="run against this server instead of starting the served engine")
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help=f"LABKIT_DB_PREFIX (default {DEFAULT_PREFIX})")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT_S, help="seconds per cell")
    args = parser.parse_args(argv)
    failures = []
    total = time.monotonic()
    with served(args.uri) as uri:
        print(f"MONGODB_URI={uri} LABKIT_DB_PREFIX={args.prefix}", flush=True)
        for path in notebooks(args.names):
            try:
                seconds = run_notebook(path, uri, args.prefix, args.timeout)
                print(f"ok    {path.name} ({seconds:.1f} s)", flush=True)
            except NotebookRunError as exc:
                failures.append(path.name)
                print(f"FAIL  {exc}", flush=True)
    print(f"{len(failures)} failed: {', '.join(failures)}" if failures else "all notebooks ran without errors",
          f"({time.monotonic() - total:.0f} s)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
