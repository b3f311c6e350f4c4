"""What tests/pytest_boot.py and labkit's lazy jsonschema import promise (README, "Tests": where the CPU goes)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest_boot

ROOT = Path(__file__).resolve().parents[1]


def test_jsonschema_came_without_rfc3987_syntax():
    # nbval imported nbformat, and with it jsonschema, after pytest_boot: the 2-second grammar was not built
    assert "jsonschema" in sys.modules
    assert "rfc3987_syntax" not in sys.modules  # neither imported nor left masked (None): sys.modules restored


def test_bytecode_is_kept_outside_the_source_tree():
    # Under PYTHONDONTWRITEBYTECODE this process and everything it starts write bytecode to build/pycache/;
    # without it nothing was changed.
    prefix = os.environ.get("PYTHONPYCACHEPREFIX")
    if prefix == str(pytest_boot.PYCACHE):
        assert "PYTHONDONTWRITEBYTECODE" not in os.environ
        assert sys.pycache_prefix == prefix and not sys.dont_write_bytecode
        code = "import sys; print(sys.pycache_prefix, sys.flags.dont_write_bytecode)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.split() == [prefix, "0"]  # what a kernel or a command-line check inherits
    else:
        assert sys.pycache_prefix == prefix  # the environment's own choice, untouched


def test_labkit_imports_jsonschema_only_to_validate():
    code = ("import sys, labkit, labkit.seed, labkit.exercises, labkit.ledger, labkit.explain\n"
            "assert 'jsonschema' not in sys.modules, 'imported with labkit'\n"
            "db = labkit.fresh_db('boot')\n"
            "db.create_collection('c', validator={'$jsonSchema': {'required': ['a']}})\n"
            "try:\n    db.c.insert_one({'b': 1})\nexcept Exception as e:\n    print(type(e).__name__)\n"
            "print('jsonschema' in sys.modules, 'rfc3987_syntax' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["WriteError", "True", "False"]
