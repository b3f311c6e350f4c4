"""The aggregation expression language: the evaluator (``match_expr``: ``$expr`` in queries and every
expression of a pipeline), its operator families (``expr_*``), ``$getField``/``$setField`` (``expressions``)
and ``$$variables`` (``variables``). Server: ``src/mongo/db/pipeline/expression*.cpp``, ``variables.cpp``.
It sits below the matcher because ``$expr`` and validators evaluate expressions.

May import: ``base``, ``bson``, ``collation``.
"""
