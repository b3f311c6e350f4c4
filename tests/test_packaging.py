"""environment.yml (the lab environment) names exactly pyproject.toml's dependencies, each with a reason; test and
benchmark tools are extras, each with a reason, and stay out of the lab environment; a wheel built from the
checkout holds every labkit package and the data labkit reads."""
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from labkit.seed import load_canonical

ROOT = Path(__file__).resolve().parents[1]


def _name(spec: str) -> str:
    return re.split(r"[<>=!~\[ ]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject() -> tuple[set[str], dict[str, set[str]]]:
    """(the dependencies, {extra: its packages})."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = {k: {_name(s) for s in v} for k, v in data["project"]["optional-dependencies"].items()}
    return {_name(s) for s in data["project"]["dependencies"]}, extras


def _environment() -> tuple[set[str], list[str]]:
    names, unexplained = set(), []
    text = (ROOT / "environment.yml").read_text().split("dependencies:", 1)[1]
    for line in text.splitlines():
        m = re.match(r"^(?:  |      )- ([A-Za-z0-9_.\-]+)([^#]*)(#.*)?$", line)  # conda, then pip-only packages
        if not m or m.group(1) in {"python", "pip", "-e"}:
            continue
        names.add(_name(m.group(1)))
        if not m.group(3) or len(m.group(3).strip("# ")) < 10:
            unexplained.append(m.group(1))
    return names, unexplained


def test_same_packages():
    env, _ = _environment()
    assert env == _pyproject()[0]


def test_the_lab_environment_holds_no_test_or_benchmark_tool():
    """`python3 dev.py lab` and environment.yml install what the lessons need; pytest, playwright & co. are the
    `test` extra (installed by `python3 dev.py test`), the embedded peers the `bench` extra."""
    deps, extras = _pyproject()
    assert {"pytest", "playwright", "hypothesis", "nbval", "jupytext"} <= extras["test"]
    for name, packages in extras.items():
        assert not packages & deps, f"extra {name} repeats a dependency: {sorted(packages & deps)}"
    text = (ROOT / "environment.yml").read_text()
    for name in set().union(*extras.values()):
        assert not re.search(rf"^\s+- {re.escape(name)}\b", text, re.M | re.I), f"environment.yml installs {name}"


def test_every_dependency_has_a_reason():
    _, unexplained = _environment()
    assert unexplained == []
    text = (ROOT / "pyproject.toml").read_text()
    for line in text.splitlines():
        if re.match(r'^\s+"[a-z]', line):
            assert "#" in line, f"no reason given for {line.strip()}"


def test_environment_installs_labkit_editable():
    assert "- -e ." in (ROOT / "environment.yml").read_text()


def test_wheel_holds_every_package_and_the_canonical_records(tmp_path):
    """``pip install .`` (not editable) must give a working labkit: every sub-package (labkit.exercises was
    once left out) and data/canonical.json, which labkit.seed reads."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "labkit", src / "labkit", ignore=shutil.ignore_patterns("__pycache__"))
    (src / "data").mkdir()
    shutil.copy(ROOT / "data" / "canonical.json", src / "data" / "canonical.json")
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"),
                          str(src)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = sorted(str(p.parent.relative_to(ROOT)) for p in (ROOT / "labkit").rglob("__init__.py"))
    assert packages and all(f"{p}/__init__.py" in names for p in packages), packages
    assert any(n.endswith(".data/data/share/schema-lab/data/canonical.json") for n in names)

    target = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                          str(wheel)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    code = ("import labkit.seed, labkit.exercises.patterns; "
            "print(labkit.seed.__file__); print(sorted(labkit.seed.load_canonical()))")
    env = dict(os.environ, PYTHONPATH=str(target))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    where, collections = out.stdout.splitlines()
    assert where.startswith(str(target))
    assert collections == repr(sorted(load_canonical()))
