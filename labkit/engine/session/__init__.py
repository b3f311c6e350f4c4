"""Client sessions, multi-document transactions and snapshot reads (``sessions``), on the engine's cluster clock
and point-in-time history (``history``). Server: ``src/mongo/db/session/``, ``src/mongo/db/transaction/``, the
storage engine's history (``src/mongo/db/storage/``).

May import: ``base``, ``service``.
"""
