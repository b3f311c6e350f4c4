"""``labkit.limits`` is the engine's ``labkit.engine.bson.limits`` (moved into the engine: the rules the server enforces
belong to it). The old name stays importable for notebooks, tests and teaching helpers: it is the same module
object, so every name (and any monkeypatch) is shared."""
import sys

from labkit.engine.bson import limits as _engine_module

sys.modules[__name__] = _engine_module
