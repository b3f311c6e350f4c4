"""environment.yml and pyproject.toml name the same packages, each with a reason."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(spec: str) -> str:
    return re.split(r"[<>=!~\[ ]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject() -> set[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    specs = list(data["project"]["dependencies"])
    for extra in data["project"]["optional-dependencies"].values():
        specs += extra
    return {_name(s) for s in specs}


def _environment() -> tuple[set[str], list[str]]:
    names, unexplained = set(), []
    text = (ROOT / "environment.yml").read_text().split("dependencies:", 1)[1]
    for line in text.splitlines():
        m = re.match(r"^  - ([A-Za-z0-9_.\-]+)([^#]*)(#.*)?$", line)
        if not m or m.group(1) in {"python", "pip"}:
            continue
        names.add(_name(m.group(1)))
        if not m.group(3) or len(m.group(3).strip("# ")) < 10:
            unexplained.append(m.group(1))
    return names, unexplained


def test_same_packages():
    env, _ = _environment()
    assert env == _pyproject()


def test_every_dependency_has_a_reason():
    _, unexplained = _environment()
    assert unexplained == []
    text = (ROOT / "pyproject.toml").read_text()
    for line in text.splitlines():
        if re.match(r'^\s+"[a-z]', line):
            assert "#" in line, f"no reason given for {line.strip()}"


def test_environment_installs_labkit_editable():
    assert "- -e ." in (ROOT / "environment.yml").read_text()
