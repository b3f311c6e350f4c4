#!/usr/bin/env python3
"""Schema Lab's two commands (needs only Python >= 3.10 with pip):

    python3 dev.py lab      set everything up in .venv and open JupyterLab at the first notebook
    python3 dev.py test     set everything up in .venv and run the whole test suite
                            (unit tests + every notebook under nbval; browser tests when chromium is there;
                            every notebook again against the served engine; the source's mongosh
                            examples when mongosh is there: tools/install_mongosh.sh)

Contributors also have:

    python3 dev.py build-notebooks [NAME ...]   regenerate notebooks from their .py sources, with outputs
    python3 dev.py demo                         demo mode: the live-demo dashboard in Voila (widgets only, code hidden)
    python3 dev.py docs [--check]               regenerate CONTENTS.md, INSTRUCTOR.md, navigation cells and
                                                students/ from the notebooks' labkit metadata
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".schema-lab-installed"
FIRST_NOTEBOOK = "notebooks/00_start_here.ipynb"
DEMO_NOTEBOOK = "notebooks/demo_dashboard.ipynb"
PYTEST_ARGS = [
    "tests", "notebooks",
    "--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/sanitize.cfg",
]


def _fingerprint() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def setup() -> None:
    """Create .venv and install labkit with its test extras, unless already done for this pyproject.toml."""
    if sys.version_info < (3, 10):
        sys.exit(f"Schema Lab needs Python >= 3.10; this is {sys.version.split()[0]}.")
    if not PY.exists():
        print(f"Creating a virtual environment in {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    if STAMP.exists() and STAMP.read_text() == _fingerprint():
        return
    print("Installing Schema Lab and its dependencies (first run takes a few minutes) ...", flush=True)
    subprocess.run([str(PY), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    subprocess.run([str(PY), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[test]"], check=True)
    STAMP.write_text(_fingerprint())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def _worker_args(rest: list[str]) -> list[str]:
    """pytest-xdist's workers for ``dev.py test``: one per core (at most 4), whole files per worker (nbval needs
    every cell of a notebook in one kernel, in order); none on one core or when ``rest`` chooses ``-n`` itself
    (``-n 0`` runs in one process)."""
    if any(a == "-n" or re.fullmatch(r"-n\d+|--numprocesses(=.*)?", a) for a in rest):
        return []
    n = min(4, os.cpu_count() or 1)
    return ["-n", str(n), "--dist", "loadfile"] if n > 1 else []


def _is_root() -> bool:
    """True when running as root (containers, cloud VMs, CI), where Jupyter refuses to start without a flag."""
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


def _root_args(tool: str, rest: list[str]) -> list[str]:
    """``--allow-root`` for JupyterLab when running as root (said aloud), unless already given."""
    if not _is_root() or "--allow-root" in rest:
        return []
    print(f"Running as root: adding --allow-root so {tool} starts (it refuses root otherwise).", flush=True)
    return ["--allow-root"]


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help", "help"}:
        print(__doc__)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd not in {"lab", "test", "build-notebooks", "docs", "demo"}:
        print(f"unknown command {cmd!r}\n{__doc__}", file=sys.stderr)
        return 2
    setup()
    os.chdir(ROOT)
    if cmd == "lab":
        args = [str(PY), "-m", "jupyter", "lab", FIRST_NOTEBOOK, *_root_args("JupyterLab", rest), *rest]
    elif cmd == "test":
        args = [str(PY), "-m", "pytest", *PYTEST_ARGS, *_worker_args(rest), *rest]
        # Exercise checks in the notebooks record progress: keep the test run's record out of the home folder.
        os.environ.setdefault("LABKIT_PROGRESS_FILE", str(ROOT / "build" / "test-progress.json"))
    elif cmd == "demo":
        # Voila has no root check (and no --allow-root flag): it starts as root as it is.
        args = [str(PY), "-m", "voila", DEMO_NOTEBOOK, "--strip_sources=True", *rest]
    elif cmd == "docs":
        args = [str(PY), str(ROOT / "tools" / "gen_docs.py"), *rest]
    else:
        args = [str(PY), str(ROOT / "tools" / "build_notebooks.py"), *rest]
    return subprocess.call(args, env=_env())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
