"""Indexes: the sorted entry structure (``entrylist``), index specs, key generation and maintenance
(``indexes``), hashed keys (``hashed``) and index bounds, the intervals of keys a scan reads
(``bounds``). Server: ``src/mongo/db/index/``; ``hasher.cpp``; the bounds builder is the server's
``src/mongo/db/query/index_bounds_builder.cpp`` (kept here because the executor's scans read bounds).

May import: the packages above, up to ``update``.
"""
