"""Connecting: the embedded engine by default, a real server when ``MONGODB_URI`` is set.

Introduced in ``notebooks/00_start_here.ipynb``.
"""
from __future__ import annotations

import os
import re
import warnings
from typing import Any
from urllib.parse import unquote, unquote_plus

import pymongo
from pymongo.errors import ConfigurationError, OperationFailure, PyMongoError

from labkit.engine import MODELED_SERVER_VERSION, EmbeddedClient

DEFAULT_TIMEOUT_MS = 3000
# How long one operation may wait for the server's answer. Lessons run whole-collection $merge / $lookup
# pipelines; on a busy shared workshop cluster they can take well over 10 s without anything being wrong.
SOCKET_TIMEOUT_MS = 300_000
ENV_URI = "MONGODB_URI"
EMBEDDED = "embedded"

_embedded_client: EmbeddedClient | None = None
#: one client per (URI, timeout): a notebook that calls ``fresh_db`` several times gets one client, so its
#: sessions work across all its databases (a session belongs to the client that started it)
_server_clients: dict[tuple[str, int], Any] = {}


class LabConnectionError(ConnectionError):
    """The configured MongoDB server could not be reached or refused the connection."""


# The URI grammar, as drivers read it: scheme://[userinfo@]hosts[/[db][?options]]. Learners paste passwords
# with unescaped '/', '@', '?' and ':' in them, so redaction is deliberately greedy: the userinfo ends at the
# LAST '@' that is followed by something shaped like a host list, and everything after the first ':' of the
# userinfo is the password. When in doubt more is hidden, never less.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_HOST_SEGMENT = re.compile(r"[A-Za-z0-9._~%\-\[\]:,]+(?=[/?#]|$)")
# Options whose values are secrets: any option name containing one of these words (case-insensitive, as drivers
# treat option names), e.g. password, tlsCertificateKeyFilePassword, proxyPassword, authMechanismProperties
# (AWS_SESSION_TOKEN:...). An option starts after "?", "&" or ";" (or a blank, in free text) and its value runs
# to the next "&", ";" or "#" (or blank, in free text). Only secret options are matched, so an odd character
# elsewhere (a ";" or "=" inside a password) can never make the scanner skip over one.
_SECRET_WORDS = r"(?:password|secret|token|credential|authmechanismproperties|passphrase)"
_OPTION = re.compile(r"(?:(?<=[?&;])|^)(?P<key>[A-Za-z0-9_.\-]*" + _SECRET_WORDS + r"[A-Za-z0-9_.\-]*)"
                     r"=(?P<value>[^&;#]*)", re.IGNORECASE)
_OPTION_IN_TEXT = re.compile(r"(?:(?<=[?&;\s])|^)(?P<key>[A-Za-z0-9_.\-]*" + _SECRET_WORDS +
                             r"[A-Za-z0-9_.\-]*)=(?P<value>[^&;#\s]*)", re.IGNORECASE)
MASK = "****"


def _split_uri(uri: str) -> tuple[str, str | None, str | None, str]:
    """``(scheme, user, password, rest)`` of one URI; ``user`` is None without userinfo."""
    m = _SCHEME.match(uri)
    scheme = m.group(0) if m else ""
    body = uri[len(scheme):]
    at = -1
    for i in range(len(body) - 1, -1, -1):
        if body[i] == "@" and _HOST_SEGMENT.match(body, i + 1):
            at = i
            break
    if at < 0:
        at = body.rfind("@")  # no host list after any '@': still hide everything before the last one
    if at < 0:
        return scheme, None, None, body
    userinfo, rest = body[:at], body[at + 1:]
    user, sep, password = userinfo.partition(":")
    return scheme, user, (password if sep else None), rest


def _redact_options(text: str, pattern: re.Pattern = _OPTION) -> str:
    def repl(m: re.Match) -> str:
        return f"{m.group('key')}={MASK}" if m.group("value") else m.group(0)
    return pattern.sub(repl, text)


def _redact_one(uri: str) -> str:
    uri = _redact_options(uri)
    scheme, user, password, rest = _split_uri(uri)
    if user is None:
        return uri
    if password is None:
        return f"{scheme}{user}@{rest}"
    return f"{scheme}{user}:{MASK}@{rest}"


# In free text (driver error messages) a URI runs from its scheme to the next blank or quote.
_URI_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*")


def redact_uri(uri: str) -> str:
    """Return ``uri`` with its password and secret options replaced by ``****`` (user names are kept).

    Works on a whole URI (any shape: unescaped ``/``, ``@`` or ``:`` in the password, ``mongodb+srv://``,
    options such as ``tlsCertificateKeyFilePassword``, ``authMechanismProperties`` or ``proxyPassword``) and on
    free text that contains URIs.
    """
    if not isinstance(uri, str):
        return repr(uri)
    if _SCHEME.match(uri) and "\n" not in uri or not any(c.isspace() for c in uri):
        return _redact_one(uri)  # one URI, with or without (or with a mistyped) scheme
    text = _URI_IN_TEXT.sub(lambda m: _redact_one(m.group(0)), uri)
    return _redact_options(text, _OPTION_IN_TEXT)


def _secrets(uri: str) -> list[str]:
    """Every secret of ``uri`` (password, secret option values) in every spelling that could leak."""
    if not isinstance(uri, str) or not uri:
        return []
    raw: list[str] = []
    m = _SCHEME.match(uri)
    body = _redact_options(uri)[len(m.group(0)) if m else 0:]
    for i, c in enumerate(body):  # every reading of the userinfo: hide each candidate password
        if c == "@":
            user, sep, password = body[:i].partition(":")
            if sep and password:
                raw.append(password)
    for m in _OPTION.finditer(uri):
        if m.group("value"):
            value = m.group("value")
            raw.extend((value, value.partition(":")[2]))
            for pair in value.split(","):  # authMechanismProperties=KEY:VALUE,KEY2:VALUE2
                raw.append(pair.partition(":")[2])
    out = set()
    for s in raw:
        out.update({s, unquote(s), unquote_plus(s)})
    return sorted((s for s in out if len(s) >= 3), key=len, reverse=True)


def scrub(text: str, uri: str) -> str:
    """Remove every secret of ``uri`` from ``text`` (used on driver error messages)."""
    text = redact_uri(str(text))
    for secret in _secrets(uri):
        text = text.replace(secret, MASK)
    return text


def _hosts(uri: str) -> str:
    """'host:port' list from a URI, for messages; never includes credentials."""
    _, _, _, rest = _split_uri(_redact_options(uri))
    hosts = re.split(r"[/?#]", rest, maxsplit=1)[0]
    return hosts.replace(",", ", ") or "?"


def embedded_client() -> EmbeddedClient:
    """The process-wide embedded engine (created on first use, like one local server)."""
    global _embedded_client
    if _embedded_client is None:
        _embedded_client = EmbeddedClient()
    return _embedded_client


_sharded: dict[int, tuple[Any, Any]] = {}


def sharded_client(shards: int, event_listeners: Any = None) -> Any:
    """A ``pymongo.MongoClient`` connected to labkit's simulated sharded cluster of ``shards`` shards, served as a
    ``mongos`` on a loopback port of this process (one cluster per shard count, like one local server)."""
    from labkit.engine.s.cluster import check_shard_count
    from labkit.engine.transport.wire import serve_in_thread
    n = check_shard_count(shards)
    entry = _sharded.get(n)
    if entry is None:
        server = serve_in_thread("127.0.0.1", 0, shards=n)
        client = pymongo.MongoClient(server.uri, appname="schema-lab", serverSelectionTimeoutMS=10_000)
        entry = _sharded[n] = (server, client)
    server, client = entry
    if event_listeners:
        return pymongo.MongoClient(server.uri, appname="schema-lab", event_listeners=list(event_listeners))
    return client


def simulated_clusters() -> dict[int, Any]:
    """The simulated sharded clusters this process serves (``connect(shards=N)``): shard count -> the
    ``pymongo.MongoClient`` connected to its mongos. Empty until a lesson asks for one."""
    return {n: client for n, (_server, client) in sorted(_sharded.items())}


def cluster_of(client: Any) -> Any:
    """The simulated cluster (``labkit.engine.s.router.Mongos``) behind a client from ``connect(shards=N)``;
    None for any other client (a real cluster's internals are not in this process)."""
    for server, c in _sharded.values():
        if c is client or (getattr(client, "address", None) == ("127.0.0.1", server.port)):
            return server.client
    return None


def is_mongos(client: Any) -> bool:
    """True when ``client`` talks to a ``mongos`` (a real sharded cluster, or labkit's simulated one)."""
    if isinstance(client, EmbeddedClient):
        return False
    try:
        return client.admin.command("hello").get("msg") == "isdbgrid"
    except (PyMongoError, AttributeError):  # no server, or not a client at all
        return False


def connect(uri: str | None = None, *, timeout_ms: int = DEFAULT_TIMEOUT_MS, event_listeners: Any = None,
            shards: int | None = None) -> Any:
    """Return a client: the embedded engine, or a ``pymongo.MongoClient`` for a real server.

    ``shards=N`` (1..16) asks for a sharded cluster: a real one when ``MONGODB_URI`` (or ``uri``) points at a
    ``mongos``; otherwise labkit's simulated cluster of N shards, served as a mongos in this process (a
    ``pymongo.MongoClient`` to it). A replica set or standalone server cannot run the sharding lessons: a warning
    says so and the simulated cluster is used instead.

    The same URI gives the same client for as long as it is open (so sessions span every database a lesson
    uses). ``uri`` wins over the ``MONGODB_URI`` environment variable; ``uri="embedded"`` forces the embedded
    engine even when ``MONGODB_URI`` is set. A real server is pinged first; if it does not answer within
    ``timeout_ms`` milliseconds a :class:`LabConnectionError` says which host failed and what to do.
    ``event_listeners`` (pymongo ``CommandListener`` objects) receive command started/succeeded/failed
    events, from a real server's driver or, on the embedded engine, as the driver would publish them.
    """
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or not 100 <= timeout_ms <= 120_000:
        raise ValueError(f"connect(timeout_ms={timeout_ms!r}): timeout_ms must be an int between 100 and 120000 milliseconds")
    if shards is not None:
        from labkit.engine.s.cluster import check_shard_count
        check_shard_count(shards)
        real_uri = uri if uri is not None else (os.environ.get(ENV_URI, "").strip() or None)
        if real_uri is None or real_uri == EMBEDDED:
            return sharded_client(shards, event_listeners)
        client = connect(real_uri, timeout_ms=timeout_ms, event_listeners=event_listeners)
        if is_mongos(client):
            return client
        warnings.warn(f"The server at {_hosts(real_uri)} is not a mongos (it is a replica set or a standalone "
                      f"server), and this section needs a sharded cluster: using labkit's simulated cluster of "
                      f"{shards} shards instead. Point {ENV_URI} at a mongos to run it on a real cluster.",
                      UserWarning, stacklevel=2)
        return sharded_client(shards, event_listeners)
    if uri is None:
        uri = os.environ.get(ENV_URI, "").strip() or None
    if uri is None or uri == EMBEDDED:
        if event_listeners:  # a client of its own (its listeners) over the one embedded store
            return EmbeddedClient(_store=embedded_client()._store, event_listeners=list(event_listeners))
        return embedded_client()
    if not isinstance(uri, str):
        raise TypeError(f"connect(uri=...): uri must be a string like 'mongodb://host:27017', got {type(uri).__name__}")
    if not uri.startswith(("mongodb://", "mongodb+srv://")):
        raise LabConnectionError(
            f"connect(uri={redact_uri(uri)!r}): a MongoDB URI starts with 'mongodb://' or 'mongodb+srv://'. "
            f"Fix the URI, or unset {ENV_URI} to use the embedded engine."
        )
    hosts = _hosts(uri)
    advice = (
        f"Start the server (or check that {hosts} is reachable from this machine), fix the URI "
        f"({redact_uri(uri)}), or unset {ENV_URI} to use the embedded engine."
    )
    cached = None if event_listeners else _server_clients.get((uri, timeout_ms))
    if cached is not None:
        try:
            cached.admin.command("ping")
            return cached
        except Exception:  # noqa: BLE001 - closed by its user, or the server went away: make a new one
            _server_clients.pop((uri, timeout_ms), None)
    try:
        with warnings.catch_warnings():  # option warnings would print the raw option; the error says enough
            warnings.simplefilter("ignore")
            client = pymongo.MongoClient(
                uri,
                serverSelectionTimeoutMS=timeout_ms,
                connectTimeoutMS=timeout_ms,
                socketTimeoutMS=max(timeout_ms, SOCKET_TIMEOUT_MS),
                appname="schema-lab",
                **({"event_listeners": list(event_listeners)} if event_listeners else {}),
            )
    except OSError as exc:  # e.g. tlsCertificateKeyFile / tlsCAFile that does not exist or cannot be read
        reason = scrub(str(exc.strerror or exc), uri).rstrip(".")
        raise LabConnectionError(
            f"A file named in the MongoDB URI cannot be used ({reason}). Fix the path in the URI "
            f"({redact_uri(uri)}), or unset {ENV_URI} to use the embedded engine."
        ) from None
    except Exception as exc:  # noqa: BLE001 - ConfigurationError, ValueError, TypeError, DNS errors ...
        reason = scrub(str(exc), uri).rstrip(".")
        raise LabConnectionError(
            f"Invalid MongoDB URI for {hosts}: {reason}. Fix the URI ({redact_uri(uri)}), or unset {ENV_URI} "
            f"to use the embedded engine."
        ) from None
    try:
        client.admin.command("ping")
    except OperationFailure as exc:
        client.close()
        raise LabConnectionError(
            f"The server at {hosts} refused the connection: {scrub(str(exc), uri)}. "
            f"Check the user name and password in the URI. {advice}"
        ) from None
    except (PyMongoError, OSError) as exc:
        client.close()
        reason = scrub(str(exc).split(", Timeout:")[0], uri)
        if len(reason) > 300:
            reason = reason[:300] + "..."
        raise LabConnectionError(
            f"No MongoDB server answered at {hosts} within {timeout_ms} ms ({reason}). {advice}"
        ) from None
    if not event_listeners:  # a client with listeners is the caller's own
        _server_clients[(uri, timeout_ms)] = client
    return client


def is_embedded(client: Any) -> bool:
    """True when ``client`` is labkit's embedded engine."""
    return isinstance(client, EmbeddedClient)


def second_client(client: Any, event_listeners: list) -> pymongo.MongoClient:
    """A new pymongo client to the server ``client`` talks to (``$MONGODB_URI`` when set, else its first host),
    reporting command events to ``event_listeners``: how a check watches a learner's commands on a server."""
    uri = os.environ.get(ENV_URI, "").strip()
    if uri and cluster_of(client) is None:  # labkit's simulated cluster is reached where the client is
        return pymongo.MongoClient(uri, event_listeners=event_listeners, serverSelectionTimeoutMS=5000)
    host, port = next(iter(client.nodes), ("localhost", 27017))
    return pymongo.MongoClient(host, port, event_listeners=event_listeners, serverSelectionTimeoutMS=5000)


def describe(client: Any) -> str:
    """One line saying which engine ``client`` is, safe to print (no credentials)."""
    if is_embedded(client):
        return f"embedded engine (in-process, models MongoDB {MODELED_SERVER_VERSION})"
    try:
        nodes = ", ".join(f"{h}:{p}" for h, p in client.nodes) or "?"
    except Exception:  # noqa: BLE001
        nodes = "?"
    try:
        info = client.server_info()
    except PyMongoError:
        info = {}
    version = info.get("version", "?")
    served = info.get("labkit")  # `python -m labkit serve` (labkit.engine.transport.wire.is_served_engine's test)
    if cluster_of(client) is not None or (isinstance(served, dict) and is_mongos(client)):
        hello = client.admin.command("hello")
        n = (hello.get("labkit") or {}).get("shards", "?")
        return f"labkit's simulated sharded cluster ({n} shards, models MongoDB {version}) served as a mongos at {nodes}"
    if isinstance(served, dict) and served.get("engine") == "embedded-served":
        return f"labkit's embedded engine served over the wire (models MongoDB {version}) at {nodes}"
    return f"MongoDB server {version} at {nodes}"
