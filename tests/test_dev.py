"""dev.py: the commands a newcomer types on a fresh clone (issue 28), as root (issue 17 item 5), bad input."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("schema_lab_dev", ROOT / "dev.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def dev(monkeypatch):
    mod = _load()
    calls: list[list[str]] = []
    installs: list[str] = []
    monkeypatch.setattr(mod, "setup", lambda extra="": installs.append(extra))
    monkeypatch.setattr(mod.subprocess, "call", lambda args, env=None: calls.append(list(args)) or 0)
    monkeypatch.chdir(ROOT)
    mod.calls = calls
    mod.installs = installs
    return mod


@pytest.mark.parametrize("uid, flagged", [(0, True), (1000, False)])
def test_lab_adds_allow_root_only_as_root(dev, monkeypatch, capsys, uid, flagged):
    monkeypatch.setattr(dev.os, "geteuid", lambda: uid, raising=False)
    assert dev.main(["lab"]) == 0
    args = dev.calls[-1]
    assert args[1:4] == ["-m", "jupyter", "lab"]
    assert ("--allow-root" in args) is flagged
    assert ("adding --allow-root" in capsys.readouterr().out) is flagged


def test_lab_does_not_repeat_the_flag(dev, monkeypatch):
    monkeypatch.setattr(dev.os, "geteuid", lambda: 0, raising=False)
    dev.main(["lab", "--allow-root"])
    assert dev.calls[-1].count("--allow-root") == 1


def test_demo_as_root_needs_no_flag(dev, monkeypatch):
    # Voila has no root check and no --allow-root option (voila --help-all); it must not get one.
    monkeypatch.setattr(dev.os, "geteuid", lambda: 0, raising=False)
    assert dev.main(["demo"]) == 0
    assert "--allow-root" not in dev.calls[-1] and "voila" in dev.calls[-1]


def test_lab_serves_the_checkout_opens_the_first_student_copy_and_hides_the_developer_tree(dev):
    """The learner's JupyterLab: root = the checkout (so CONTENTS.md and every lesson's ../CONTENTS.md link
    resolve), lesson 00's answer-free copy opened, the developer tree left out of the file browser."""
    assert dev.main(["lab"]) == 0
    args = dev.calls[-1]
    assert args[4] == "students/00_start_here.ipynb" and (ROOT / args[4]).exists()
    assert f"--ServerApp.root_dir={ROOT}" in args
    hidden = {a.split("=", 1)[1] for a in args if a.startswith("--ContentsManager.hide_globs=")}
    shown = {"CONTENTS.md", "README.md", "INSTRUCTOR.md", "students", "notebooks"}
    tracked = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}
    assert tracked - shown <= hidden, "every other top-level entry is hidden"
    assert not hidden & shown
    assert {"labkit", "tests", "tools", "dev.py", "pyproject.toml", "src", "__pycache__"} <= hidden
    assert dev.installs == [""], "the lab installs what the lessons need, not the test tools"


def test_lab_settings_are_dev_pys_unless_you_give_yours(dev):
    """JupyterLab refuses --LabApp.app_settings_dir given twice (its extension then fails to load)."""
    dev.main(["lab"])
    assert sum(a.startswith("--LabApp.app_settings_dir=") for a in dev.calls[-1]) == 1
    dev.main(["lab", "--LabApp.app_settings_dir=/elsewhere"])
    assert [a for a in dev.calls[-1] if a.startswith("--LabApp.app_settings_dir")] == ["--LabApp.app_settings_dir=/elsewhere"]


@pytest.mark.parametrize("cmd", ["doctor", "seed", "reset", "workshop", "progress", "review", "serve"])
def test_labkit_commands_run_in_the_environment(dev, cmd):
    assert dev.main([cmd, "--help"]) == 0
    assert dev.calls[-1][0] == str(dev.python()) and dev.calls[-1][1:] == ["-m", "labkit", cmd, "--help"]
    assert dev.installs == [""]


def test_test_command_installs_the_test_extra(dev):
    dev.main(["test", "-k", "x"])
    assert dev.installs == ["test"]
    assert dev.calls[-1][1:3] == ["-m", "pytest"] and "students" in dev.calls[-1]


@pytest.mark.parametrize("argv, named", [
    (["tset"], "'tset'"),
    ([], "no command"),
    (["docs", "--force"], "'--force'"),
    (["build-notebooks", "99_nothing"], "'99_nothing'"),
    (["build-notebooks", "--all"], "'--all'"),
    (["lab-setup", "--force"], "'--force'"),
])
def test_bad_input_is_one_line_exit_2_nothing_installed(dev, capsys, argv, named):
    assert dev.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dev.py: error: ") and named in err, err
    assert "Traceback" not in err
    assert any(w in err for w in ("choose one of", "allowed", "give names", "takes none")), "names the allowed values"
    assert dev.installs == [] and dev.calls == [], "nothing installed, nothing run"


def test_setup_installs_lessons_then_test_extra_visibly(monkeypatch, tmp_path):
    """First `lab`: `pip install -e .` (no test tools); then `test`: `.[test]`; no --quiet (pip's lines show);
    the stamp remembers both, so neither installs again until pyproject.toml changes."""
    mod = _load()
    monkeypatch.delenv("SCHEMA_LAB_PYTHON", raising=False)
    monkeypatch.setattr(mod, "VENV", tmp_path / ".venv")
    monkeypatch.setattr(mod, "STAMP", tmp_path / ".venv" / "stamp")
    monkeypatch.setattr(mod.venv, "EnvBuilder", lambda **kw: type("B", (), {"create": lambda self, p: (
        Path(p, "bin").mkdir(parents=True), Path(p, "bin", "python").write_text(""))})())
    runs: list[list[str]] = []
    monkeypatch.setattr(mod, "run_visibly", lambda args, what: runs.append(args))
    mod.setup("")
    assert [r[-1] for r in runs] == ["pip", str(ROOT)]
    assert not any("--quiet" in r or "-q" in r for r in runs)
    mod.setup("")
    mod.setup("test")
    assert runs[-1][-1] == f"{ROOT}[test]" and len(runs) == 4
    mod.setup("test")
    mod.setup("")
    assert len(runs) == 4
    assert json.loads(mod.STAMP.read_text())["extras"] == ["", "test"]


def test_run_visibly_speaks_while_the_command_is_silent(monkeypatch, capsys):
    mod = _load()
    monkeypatch.setattr(mod, "HEARTBEAT_S", 1)
    mod.run_visibly([sys.executable, "-c", "import time; print('first', flush=True); time.sleep(2.6)"], "demo step")
    out = capsys.readouterr().out
    assert out.startswith("first\n") and "demo step: still working" in out and "demo step: done" in out
    with pytest.raises(SystemExit, match="demo step failed"):
        mod.run_visibly([sys.executable, "-c", "raise SystemExit(3)"], "demo step")


def test_schema_lab_python_uses_that_environment_and_installs_nothing(monkeypatch, tmp_path):
    mod = _load()
    monkeypatch.setenv("SCHEMA_LAB_PYTHON", sys.executable)
    monkeypatch.setattr(mod, "VENV", tmp_path / "never")
    mod.setup("test")
    assert not (tmp_path / "never").exists() and mod.python() == Path(sys.executable)
    monkeypatch.setenv("SCHEMA_LAB_PYTHON", str(tmp_path / "nope" / "python"))
    with pytest.raises(mod.UsageError, match="SCHEMA_LAB_PYTHON"):
        mod.setup("")


def test_mongosh_starts_with_telemetry_off(tmp_path):
    """`python3 dev.py mongosh ...` first runs the manual's `disableTelemetry()`; mongosh keeps that in the
    user's configuration (here a scratch HOME), so `config.get("enableTelemetry")` is then false."""
    from served_helpers import mongosh_path, unavailable

    exe = mongosh_path()
    if exe is None:
        unavailable("mongosh not found; python3 dev.py mongosh (or tools/install_mongosh.sh) installs it into "
                    ".tools/, or set SCHEMA_LAB_MONGOSH")
    env = dict(os.environ, HOME=str(tmp_path), SCHEMA_LAB_MONGOSH=exe, APPDATA=str(tmp_path),
               LOCALAPPDATA=str(tmp_path))
    out = subprocess.run([sys.executable, str(ROOT / "dev.py"), "mongosh", "--nodb", "--quiet", "--eval",
                          "print(config.get('enableTelemetry'))"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "false", out.stdout
    assert "telemetry is off" in out.stdout


def test_mongosh_missing_executable_is_a_usage_error(tmp_path):
    env = dict(os.environ, SCHEMA_LAB_MONGOSH=str(tmp_path / "no-mongosh"))
    out = subprocess.run([sys.executable, str(ROOT / "dev.py"), "mongosh"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 2 and "SCHEMA_LAB_MONGOSH=" in out.stderr and out.stderr.count("\n") == 1
