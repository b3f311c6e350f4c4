"""Connecting: the embedded engine by default, a real server when ``MONGODB_URI`` is set.

Introduced in ``notebooks/00_start_here.ipynb``.
"""
from __future__ import annotations

import os
import re
import warnings
from typing import Any
from urllib.parse import unquote

import pymongo
from pymongo.errors import ConfigurationError, OperationFailure, PyMongoError

from labkit.engine import MODELED_SERVER_VERSION, EmbeddedClient

DEFAULT_TIMEOUT_MS = 3000
# How long one operation may wait for the server's answer. Lessons run whole-collection $merge / $lookup
# pipelines; on a busy shared workshop cluster they can take well over 10 s without anything being wrong.
SOCKET_TIMEOUT_MS = 300_000
ENV_URI = "MONGODB_URI"
EMBEDDED = "embedded"

# user:password@ after any scheme:// (mongodb://, mongodb+srv://, or a mistyped one); percent-encoding kept.
_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/]*)(?::(?P<password>[^@/]*))?@")

_embedded_client: EmbeddedClient | None = None
# One MongoClient per (URI, timeout) per process, like the one embedded engine: every fresh_db() and connect()
# then shares a client, so a session started on one lesson database works with another (pymongo refuses a
# session from a different MongoClient) and connections are not opened again for each call.
_server_clients: dict[tuple[str, int], Any] = {}


class LabConnectionError(ConnectionError):
    """The configured MongoDB server could not be reached or refused the connection."""


def redact_uri(uri: str) -> str:
    """Return ``uri`` with any password replaced by ``****`` (user names are kept)."""
    if not isinstance(uri, str):
        return repr(uri)

    def repl(m: re.Match) -> str:
        if m.group("password") is None:
            return m.group(0)
        return f"{m.group('scheme')}{m.group('user')}:****@"

    return _CREDENTIALS.sub(repl, uri)


def _secrets(uri: str) -> list[str]:
    """The password of ``uri`` in every spelling that could leak into a message."""
    m = _CREDENTIALS.search(uri or "")
    if not m or not m.group("password"):
        return []
    raw = m.group("password")
    return sorted({raw, unquote(raw)}, key=len, reverse=True)


def scrub(text: str, uri: str) -> str:
    """Remove the password of ``uri`` from ``text`` (used on driver error messages)."""
    text = redact_uri(text)
    for secret in _secrets(uri):
        if secret:
            text = text.replace(secret, "****")
    return text


def _hosts(uri: str) -> str:
    """'host:port' list from a URI, for messages; never includes credentials."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = pymongo.uri_parser.parse_uri(uri, validate=False, warn=True)
        nodes = parsed.get("nodelist") or []
        if nodes:
            return ", ".join(f"{h}:{p}" for h, p in nodes)
    except Exception:  # noqa: BLE001 - SRV lookups and odd URIs: fall back to text
        pass
    rest = redact_uri(uri).split("://", 1)[-1]
    rest = rest.split("@", 1)[-1]
    return rest.split("/", 1)[0] or "?"


def embedded_client() -> EmbeddedClient:
    """The process-wide embedded engine (created on first use, like one local server)."""
    global _embedded_client
    if _embedded_client is None:
        _embedded_client = EmbeddedClient()
    return _embedded_client


def connect(uri: str | None = None, *, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Any:
    """Return a client: the embedded engine, or a ``pymongo.MongoClient`` for a real server.

    ``uri`` wins over the ``MONGODB_URI`` environment variable; ``uri="embedded"`` forces the embedded
    engine even when ``MONGODB_URI`` is set. A real server is pinged first; if it does not answer within
    ``timeout_ms`` milliseconds a :class:`LabConnectionError` says which host failed and what to do.
    The same URI gives the same client for the whole process (a new one after it was closed).
    """
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or not 100 <= timeout_ms <= 120_000:
        raise ValueError(f"connect(timeout_ms={timeout_ms!r}): timeout_ms must be an int between 100 and 120000 milliseconds")
    if uri is None:
        uri = os.environ.get(ENV_URI, "").strip() or None
    if uri is None or uri == EMBEDDED:
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
    key = (uri, timeout_ms)
    client = _server_clients.get(key)
    if client is not None and getattr(client, "_closed", False):
        client = None  # closed by its user: make a new one
    try:
        if client is None:
            client = pymongo.MongoClient(
                uri,
                serverSelectionTimeoutMS=timeout_ms,
                connectTimeoutMS=timeout_ms,
                socketTimeoutMS=max(timeout_ms, SOCKET_TIMEOUT_MS),
                appname="schema-lab",
            )
    except (ConfigurationError, ValueError, TypeError) as exc:
        raise LabConnectionError(f"Invalid MongoDB URI for {hosts}: {scrub(str(exc), uri)}. {advice}") from None
    try:
        client.admin.command("ping")
    except OperationFailure as exc:
        _server_clients.pop(key, None)
        client.close()
        raise LabConnectionError(
            f"The server at {hosts} refused the connection: {scrub(str(exc), uri)}. "
            f"Check the user name and password in the URI. {advice}"
        ) from None
    except PyMongoError as exc:
        _server_clients.pop(key, None)
        client.close()
        reason = scrub(str(exc).split(", Timeout:")[0], uri)
        if len(reason) > 300:
            reason = reason[:300] + "..."
        raise LabConnectionError(
            f"No MongoDB server answered at {hosts} within {timeout_ms} ms ({reason}). {advice}"
        ) from None
    _server_clients[key] = client
    return client


def is_embedded(client: Any) -> bool:
    """True when ``client`` is labkit's embedded engine."""
    return isinstance(client, EmbeddedClient)


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
    served = info.get("labkit")  # `python -m labkit serve` (labkit.engine.wire.is_served_engine's test)
    if isinstance(served, dict) and served.get("engine") == "embedded-served":
        return f"labkit's embedded engine served over the wire (models MongoDB {version}) at {nodes}"
    return f"MongoDB server {version} at {nodes}"
