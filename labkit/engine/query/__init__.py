"""The query system: the planner and the executor that runs the chosen plan (``planner``), explain in
the server's shape (``explain_doc``, ``sbe_explain``), collation-aware plans (``collate``) and find
projections (``projection``). Server: ``src/mongo/db/query/``.

May import: the packages above, up to ``exec``.
"""
