"""The sharded cluster: a router (``mongos``) over N shards, each an embedded engine, and a config server's metadata.

Server: ``src/mongo/s/`` (the router: targeting, the chunk manager, cluster commands, cluster explain) and
``src/mongo/db/s/`` (the shard and config server side: shardCollection's checks, splitting, the balancer,
migrations).
May import: every lower folder and the engine's client (``EmbeddedClient``, each shard is one); only
``transport/`` (the wire server) imports it.
"""
