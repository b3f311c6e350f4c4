"""Executable plan stages with the classic engine's counters (``stages``: COLLSCAN, IXSCAN, FETCH, SORT,
OR, ..., works/advanced/needTime, keys and documents examined). Server: ``src/mongo/db/exec/``.

May import: the packages above, up to ``index``.
"""
