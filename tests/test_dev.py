"""dev.py lab / demo as root (issue 17 item 5): JupyterLab refuses root without --allow-root."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def dev(monkeypatch):
    spec = importlib.util.spec_from_file_location("schema_lab_dev", ROOT / "dev.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    calls: list[list[str]] = []
    monkeypatch.setattr(mod, "setup", lambda: None)
    monkeypatch.setattr(mod.subprocess, "call", lambda args, env=None: calls.append(list(args)) or 0)
    monkeypatch.chdir(ROOT)
    mod.calls = calls
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
