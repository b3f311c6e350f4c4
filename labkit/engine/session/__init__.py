"""Client sessions and multi-document transactions (``sessions``). Server: ``src/mongo/db/session/``,
``src/mongo/db/transaction/``.

May import: ``base``, ``service``.
"""
