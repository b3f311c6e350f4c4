"""The engine's ground floor: errors every layer raises (``errors``), the hook registry through which a higher
layer plugs into a lower one (``hooks``) and document helpers (``docutil``: copying, sort specifications,
ObjectIds). Server: ``src/mongo/base/`` and ``src/mongo/util/``.

May import: nothing of the engine.
"""
