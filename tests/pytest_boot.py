"""Loaded before every other plugin (pyproject.toml: ``addopts = -p pytest_boot``, ``pythonpath = tests``), so
its two settings hold for nbval's imports, for pytest-xdist's workers and for every kernel and subprocess the
suite starts (they inherit this process's environment):

- jsonschema is imported without its optional ``rfc3987_syntax`` module, as labkit's validation does
  (labkit/engine/matcher/validation.py): that module only serves the ``iri`` *format* checker, which neither
  nbformat nor labkit uses, and building its grammar costs about 2 s of CPU in each process that imports
  nbformat (the controller, each worker). ``sys.modules`` is restored after, so an explicit import still works.
- Compiled bytecode is kept when the environment asks Python not to write it next to the sources
  (``PYTHONDONTWRITEBYTECODE``): it goes to ``build/pycache/`` instead (``PYTHONPYCACHEPREFIX``), so the ~95
  Python processes of a run (workers, kernels, command-line checks) do not each compile labkit from source and
  each worker does not rewrite the asserts of every test module again (about 10 s of CPU per collecting process).
  The source tree stays free of ``__pycache__`` as asked. Without that variable nothing changes.

Once pytest is configured it also has notebook kernels forked from one warmed process per pytest process
(tests/kernel_forkserver.py: about 0.3 s less per kernel, about 100 kernels a run).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

PYCACHE = Path(__file__).resolve().parents[1] / "build" / "pycache"


def _keep_bytecode() -> None:
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    os.environ.pop("PYTHONDONTWRITEBYTECODE")
    os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    sys.pycache_prefix = str(PYCACHE)
    sys.dont_write_bytecode = False


def _import_jsonschema_lean() -> None:
    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        return
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # jsonschema's import of it fails: skipped
    try:
        import jsonschema  # noqa: F401
    finally:
        del sys.modules["rfc3987_syntax"]


_keep_bytecode()
_import_jsonschema_lean()


def pytest_configure(config) -> None:
    """Kernels for notebooks are forked from a warmed process (tests/kernel_forkserver.py)."""
    import kernel_forkserver

    kernel_forkserver.install()
