"""The aggregation framework: the stage loop (``aggregation``), stages that need collections
(``extra_stages``: ``$out``, ``$merge``, ``$graphLookup``, ``$unionWith``...), accumulators and
the grouping, window, densify, redact and document stages, and the server's stage names. Server:
``src/mongo/db/pipeline/``. The expression language is the sub-package ``expression`` (lower down).

May import: the packages above, up to ``stats``; never ``catalog`` (collections call into it).
"""
