"""What observes operations: storage statistics (``storage_stats``: collStats, dbStats, ``$collStats``,
``$indexStats``), the database profiler (``profiler``: ``system.profile``) and command monitoring
(``monitoring``: pymongo's command events). Server: ``src/mongo/db/stats/``, ``introspect.cpp``.

May import: the packages above, up to ``session``.
"""
