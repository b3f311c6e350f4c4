"""Commands as a driver sends them (``dispatch``: find, insert, getMore, ...; run in-process or from the wire),
the database (``database``), database-level aggregation (``db_aggregate``) and the client-level
``bulkWrite`` (``client_bulk``). Server: ``src/mongo/db/commands/``.

May import: every package above.
"""
