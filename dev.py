#!/usr/bin/env python3
"""Schema Lab from a fresh clone, no activation needed (only Python >= 3.10 with pip):

    python3 dev.py lab          set up .venv and open JupyterLab at the first lesson (students/, no answers)
    python3 dev.py demo         demo mode: the live-demo dashboard in Voila (widgets only, code hidden)
    python3 dev.py doctor       labkit's commands, run in .venv: doctor, seed, reset, workshop, progress,
    python3 dev.py serve        review, serve (`python3 dev.py doctor --help`, ...; the same as
                                `python -m labkit doctor` in an activated .venv)
    python3 dev.py mongosh [ARGS]   mongosh (installed into .tools/ with npm on first use), telemetry off
    python3 dev.py test [PYTEST ARGS]   set up the test tools too and run the whole test suite

Binder and JupyterHub images (built from environment.yml; see INSTRUCTOR.md) run, from postBuild:

    python3 dev.py lab-setup    make that environment's JupyterLab show what `dev.py lab` shows (the developer
                                tree hidden, Markdown as pages); writes its settings into the environment

Contributors also have:

    python3 dev.py build-notebooks [NAME ...]   regenerate notebooks from their .py sources, with outputs
    python3 dev.py docs [--check]               regenerate CONTENTS.md, INSTRUCTOR.md, navigation cells and
                                                students/ from the notebooks' labkit metadata

The first command creates .venv/ and installs what the lessons need (`pip install -e .`); `test`,
`build-notebooks` and `docs` add the test extra (`pip install -e .[test]`). Every step and pip's own lines are
shown as they happen. SCHEMA_LAB_PYTHON=/path/to/python uses an environment you manage yourself (conda,
JupyterHub, CI) instead of .venv; dev.py then installs nothing.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".schema-lab-installed"
FIRST_NOTEBOOK = "students/00_start_here.ipynb"
DEMO_NOTEBOOK = "notebooks/demo_dashboard.ipynb"
PYTEST_ARGS = [
    "tests", "notebooks", "students",
    "--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/sanitize.cfg",
]
LABKIT_COMMANDS = ("doctor", "seed", "reset", "workshop", "progress", "review", "serve")
NEEDS_TEST_EXTRA = ("test", "build-notebooks", "docs")
COMMANDS = ("lab", "demo", *LABKIT_COMMANDS, "mongosh", "test", "build-notebooks", "docs", "lab-setup")
# What a learner sees in JupyterLab's file browser: these entries of the checkout; everything else of the
# developer tree (labkit/, tests/, tools/, dev.py, ..., and the lessons' .py sources in notebooks/src/) is hidden
# from the listing with jupyter_server's ContentsManager.hide_globs (names, matched at every level).
LAB_SHOWN = ("CONTENTS.md", "README.md", "INSTRUCTOR.md", "students", "notebooks")
LAB_ALSO_HIDDEN = ("src", "__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*~", "*.egg-info")
# JupyterLab settings for the learner's lab (overrides.json): Markdown files open as a page whose links work
# (CONTENTS.md, the READMEs), and JupyterLab does not fetch news or check for updates over the network.
LAB_SETTINGS = ROOT / "tools" / "jupyterlab-settings"
HEARTBEAT_S = 15  # a line at least this often while pip works silently
MONGOSH = ROOT / ".tools" / "node_modules" / ".bin" / ("mongosh.cmd" if os.name == "nt" else "mongosh")
MONGOSH_VERSION = "2"
# https://www.mongodb.com/docs/mongodb-shell/telemetry/ : mongosh sends anonymous usage data unless told not to;
# "mongosh --nodb --eval 'disableTelemetry()'" turns it off (kept in the user's mongosh configuration).
MONGOSH_TELEMETRY_OFF = ["--nodb", "--quiet", "--eval", "disableTelemetry()"]


class UsageError(Exception):
    """Bad input to dev.py: one line naming the argument and the allowed values (exit status 2)."""


# --- the environment -----------------------------------------------------------------------------------------

def _venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def python() -> Path:
    """The Python that runs Schema Lab: $SCHEMA_LAB_PYTHON when set, else .venv's."""
    given = os.environ.get("SCHEMA_LAB_PYTHON", "").strip()
    return Path(given) if given else _venv_python()


def _fingerprint() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def _installed() -> set[str]:
    """The extras installed in .venv for the current pyproject.toml ("" is the lessons' set); empty if stale."""
    try:
        text = STAMP.read_text()
    except OSError:
        return set()
    if text == _fingerprint():  # written by an older dev.py, which installed the test extra every time
        return {"", "test"}
    try:
        stamp = json.loads(text)
    except ValueError:
        return set()
    return set(stamp.get("extras", [])) if stamp.get("fingerprint") == _fingerprint() else set()


def _say(text: str) -> None:
    print(f"[dev.py] {text}", flush=True)


def run_visibly(args: list[str], what: str) -> None:
    """Run ``args``, passing every line of its output through as it comes, and a line of our own whenever it
    has been silent for HEARTBEAT_S seconds (pip installing wheels says nothing for a while)."""
    start = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            cwd=ROOT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    last = {"line": "", "at": time.monotonic()}
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(1.0):
            if time.monotonic() - last["at"] >= HEARTBEAT_S:
                _say(f"{what}: still working ({time.monotonic() - start:.0f} s; last: {last['line'][:70]})")
                last["at"] = time.monotonic()

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            if line.strip():
                last.update(line=line.strip(), at=time.monotonic())
        code = proc.wait()
    finally:
        done.set()
        beat.join()
    if code:
        raise SystemExit(f"[dev.py] {what} failed (exit status {code}); see the lines above.")
    _say(f"{what}: done in {time.monotonic() - start:.0f} s")


def setup(extra: str = "") -> None:
    """Create .venv and install labkit with what the lessons need, plus the ``extra`` (e.g. "test"), unless
    already done for this pyproject.toml. With $SCHEMA_LAB_PYTHON set, check that Python instead."""
    if sys.version_info < (3, 10):
        raise SystemExit(f"Schema Lab needs Python >= 3.10; this is {sys.version.split()[0]}.")
    if os.environ.get("SCHEMA_LAB_PYTHON", "").strip():
        if not python().exists():
            raise UsageError(f"SCHEMA_LAB_PYTHON={python()}: no such file; give the path of a Python executable "
                             "that has Schema Lab installed, or unset it to use .venv")
        return
    wanted = {"", extra}
    have = _installed()
    if wanted <= have:
        return
    if not _venv_python().exists():
        _say(f"step 1/3: creating a virtual environment in {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    py = str(_venv_python())
    _say("step 2/3: upgrading pip")
    run_visibly([py, "-m", "pip", "install", "--upgrade", "--disable-pip-version-check", "pip"], "pip upgrade")
    target = f"{ROOT}[{extra}]" if extra else str(ROOT)
    what = "labkit and what the lessons need" + (f", plus the {extra} extra" if extra else "")
    _say(f"step 3/3: installing {what} (the first time takes a few minutes; pip's lines follow)")
    run_visibly([py, "-m", "pip", "install", "--disable-pip-version-check", "-e", target], "install")
    STAMP.write_text(json.dumps({"fingerprint": _fingerprint(), "extras": sorted(have | wanted)}))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(python().parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("PYTHONHASHSEED", "0")
    return env


# --- commands --------------------------------------------------------------------------------------------------

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
    _say(f"running as root: adding --allow-root so {tool} starts (it refuses root otherwise)")
    return ["--allow-root"]


def lab_hidden() -> list[str]:
    """``ContentsManager.hide_globs`` for ``dev.py lab``: every entry of the checkout's top level but LAB_SHOWN
    (dot-files are hidden by Jupyter anyway), the lessons' sources (``src``) and Jupyter's own defaults."""
    top = sorted(p.name for p in ROOT.iterdir() if not p.name.startswith(".") and p.name not in LAB_SHOWN)
    return [*top, *(g for g in LAB_ALSO_HIDDEN if g not in top)]


def lab_args(rest: list[str]) -> list[str]:
    """``jupyter lab`` serving the checkout, opened at the first student copy, developer tree hidden."""
    hide = [f"--ContentsManager.hide_globs={g}" for g in lab_hidden()]
    # JupyterLab refuses app_settings_dir given twice: yours (in rest) replaces ours
    settings = [] if any(a.startswith("--LabApp.app_settings_dir") for a in rest) else \
        [f"--LabApp.app_settings_dir={LAB_SETTINGS}"]
    return ["-m", "jupyter", "lab", FIRST_NOTEBOOK, f"--ServerApp.root_dir={ROOT}", *hide, *settings,
            *_root_args("JupyterLab", rest), *rest]


def _check_names(names: list[str]) -> None:
    sources = sorted(p.stem for p in (ROOT / "notebooks" / "src").glob("*.py"))
    for name in names:
        stem = Path(name).stem
        if name.startswith("-") or not any(s == stem or s.startswith(stem) for s in sources):
            raise UsageError(f"build-notebooks: {name!r} is not a lesson; give names (or prefixes) of "
                             f"notebooks/src/*.py, e.g. {', '.join(sources[:3])} ... (none: all of them)")


def _check_args(cmd: str, rest: list[str]) -> None:
    """dev.py's own arguments, checked before anything is installed or written."""
    if cmd == "lab-setup" and rest:
        raise UsageError(f"lab-setup: unexpected argument {' '.join(rest)!r}; it takes none")
    if cmd == "docs" and rest not in ([], ["--check"]):
        raise UsageError(f"docs: unexpected argument {' '.join(rest)!r}; allowed: --check (or nothing)")
    if cmd == "build-notebooks":
        _check_names(rest)


def lab_setup() -> int:
    """Configure the environment of :func:`python` like ``dev.py lab`` configures JupyterLab on the command line:
    ``<prefix>/etc/jupyter/jupyter_server_config.json`` (the hidden names, merged into what is there) and the
    JupyterLab settings overrides in ``<prefix>/share/jupyter/lab/settings/overrides.json`` (merged too)."""
    prefix = Path(subprocess.run([str(python()), "-c", "import sys; print(sys.prefix)"], capture_output=True,
                                 text=True, check=True).stdout.strip())
    config = prefix / "etc" / "jupyter" / "jupyter_server_config.json"  # read by every jupyter server there
    config.parent.mkdir(parents=True, exist_ok=True)
    server = json.loads(config.read_text()) if config.exists() else {}
    server.setdefault("ContentsManager", {})["hide_globs"] = lab_hidden()
    config.write_text(json.dumps(server, indent=1) + "\n")
    overrides = prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    overrides.parent.mkdir(parents=True, exist_ok=True)
    merged = json.loads(overrides.read_text()) if overrides.exists() else {}
    merged.update(json.loads((LAB_SETTINGS / "overrides.json").read_text()))
    overrides.write_text(json.dumps(merged, indent=2) + "\n")
    _say(f"wrote {config} and {overrides}")
    return 0


def find_mongosh() -> str | None:
    """$SCHEMA_LAB_MONGOSH, else .tools/'s mongosh, else mongosh on PATH (None when there is none)."""
    given = os.environ.get("SCHEMA_LAB_MONGOSH", "").strip()
    if given:
        if not Path(given).exists():
            raise UsageError(f"SCHEMA_LAB_MONGOSH={given}: no such file; give the path of a mongosh "
                             "executable, or unset it to let dev.py install one into .tools/")
        return given
    if MONGOSH.exists():
        return str(MONGOSH)
    return shutil.which("mongosh")


def install_mongosh() -> str:
    """``npm install mongosh@2`` into .tools/ (git-ignored), visibly; the path of the installed mongosh."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("[dev.py] mongosh is not installed and npm was not found: install Node.js (>= 18) with "
                         "npm (e.g. apt-get install nodejs npm), or set SCHEMA_LAB_MONGOSH=/path/to/mongosh")
    _say(f"installing mongosh@{MONGOSH_VERSION} with npm into .tools/ (about a minute)")
    run_visibly([npm, "install", "--prefix", str(ROOT / ".tools"), "--no-audit", "--no-fund",
                 "--loglevel=http", f"mongosh@{MONGOSH_VERSION}"], "npm install mongosh")
    return str(MONGOSH)


def mongosh(rest: list[str]) -> int:
    """Run mongosh with ``rest``, after turning its telemetry off (the documented ``disableTelemetry()``)."""
    exe = find_mongosh() or install_mongosh()
    off = subprocess.run([exe, *MONGOSH_TELEMETRY_OFF], capture_output=True, text=True, timeout=120)
    if off.returncode != 0:
        raise SystemExit(f"[dev.py] could not turn mongosh's telemetry off ({exe}): "
                         f"{(off.stderr or off.stdout).strip()[:300]}")
    _say("mongosh telemetry is off (disableTelemetry(); see README: Serve the engine to mongosh and Compass)")
    return subprocess.call([exe, *rest])


def command_args(cmd: str, rest: list[str]) -> list[str]:
    """The Python command line (after the interpreter) that ``dev.py cmd rest`` runs."""
    if cmd == "lab":
        return lab_args(rest)
    if cmd == "demo":  # Voila has no root check (and no --allow-root flag): it starts as root as it is.
        return ["-m", "voila", DEMO_NOTEBOOK, "--strip_sources=True", *rest]
    if cmd in LABKIT_COMMANDS:
        return ["-m", "labkit", cmd, *rest]
    if cmd == "test":
        return ["-m", "pytest", *PYTEST_ARGS, *_worker_args(rest), *rest]
    if cmd == "docs":
        return [str(ROOT / "tools" / "gen_docs.py"), *rest]
    return [str(ROOT / "tools" / "build_notebooks.py"), *rest]


def main(argv: list[str]) -> int:
    if argv and argv[0] in {"-h", "--help", "help"}:
        print(__doc__)
        return 0
    try:
        if not argv:
            raise UsageError(f"no command given; choose one of: {', '.join(COMMANDS)} (python3 dev.py --help)")
        cmd, rest = argv[0], argv[1:]
        if cmd not in COMMANDS:
            raise UsageError(f"unknown command {cmd!r}; choose one of: {', '.join(COMMANDS)}")
        _check_args(cmd, rest)
        if cmd == "mongosh":
            return mongosh(rest)
        setup("test" if cmd in NEEDS_TEST_EXTRA else "")
        if cmd == "lab-setup":
            return lab_setup()
    except UsageError as exc:
        print(f"dev.py: error: {exc}", file=sys.stderr)
        return 2
    if cmd not in LABKIT_COMMANDS:  # labkit's commands read and write paths relative to where you are
        os.chdir(ROOT)
    if cmd in LABKIT_COMMANDS:  # labkit's errors and --help then name the command as typed: python3 dev.py seed
        os.environ["LABKIT_PROG"] = "python3 dev.py"
    if cmd == "test":  # exercise checks in the notebooks record progress: keep the test run's out of ~
        os.environ.setdefault("LABKIT_PROGRESS_FILE", str(ROOT / "build" / "test-progress.json"))
    return subprocess.call([str(python()), *command_args(cmd, rest)], env=_env())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
