"""The query language: match expressions compiled to closures (``match``), ``$jsonSchema`` and validators
(``validation``) and predicate implication for partial indexes (``subset``). Server:
``src/mongo/db/matcher/`` (``schema/``, ``expression_algo.cpp``).

May import: ``base``, ``bson``, ``collation``, ``pipeline.expression``.
"""
