"""labkit's version, in the one place both the engine (buildInfo / hello) and ``labkit.__version__`` read it.

It sits in the engine's lowest layer, so the command layer reports it without importing the teaching helpers;
``labkit/__init__.py`` re-exports it. Keep it equal to ``version`` in pyproject.toml.
"""
__version__ = "0.1.0"
