"""Collections and their kinds: the record store with maintained indexes (``store``), the plain collection
and its cursor (``collection``), bulk writes (``bulk``), capped and clustered collections, write-time
rules, validation and DDL (``rules``), views, time-series collections and the TTL monitor. Server:
``src/mongo/db/catalog/``, ``views/``, ``timeseries/``, ``ttl.cpp``.

May import: the packages above, up to ``pipeline``.
"""
