"""ICU-like English collation in pure Python (``collator``): comparison keys for strength 1-5, case and
numeric ordering. Server: ``src/mongo/db/query/collation/`` (the collator interface over ICU).

May import: ``base``, ``bson``.
"""
