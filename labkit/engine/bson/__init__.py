"""BSON values as the server orders, names and sizes them: comparison order and type names (``values``), key
strings and index keys (``keys``), document limits (``limits``: 16 MiB, 100 levels). Server:
``src/mongo/bson/``, ``src/mongo/db/storage/key_string.cpp``.

May import: ``base``.
"""
