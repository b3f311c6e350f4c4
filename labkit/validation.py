"""``labkit.validation`` is the engine's ``labkit.engine.matcher.validation`` (moved into the engine: the rules the server enforces
belong to it). The old name stays importable for notebooks, tests and teaching helpers: it is the same module
object, so every name (and any monkeypatch) is shared."""
import sys

from labkit.engine.matcher import validation as _engine_module

sys.modules[__name__] = _engine_module
