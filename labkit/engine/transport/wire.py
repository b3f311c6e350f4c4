"""The embedded engine served over MongoDB's wire protocol (``python -m labkit serve``).

One ``EmbeddedClient`` (one store) is shared by every connection. The protocol part is small (manual page
"MongoDB Wire Protocol"): a 16-byte header (messageLength, requestID, responseTo, opCode, little-endian int32),
then

* OP_MSG (2013): uint32 flagBits (bit 0 checksumPresent, bit 1 moreToCome, bit 16 exhaustAllowed), sections
  (kind 0: one BSON body; kind 1: int32 size, cstring identifier, BSON documents: a document sequence, folded
  into the body under its identifier), an optional CRC-32C checksum. A request with moreToCome (an
  unacknowledged write) gets no reply.
* OP_QUERY (2004), legacy: only the ``hello`` / ``isMaster`` handshake on ``<db>.$cmd`` that old clients send
  first, answered with OP_REPLY (1), as a MongoDB 8.0 server does. Other OP_QUERY commands get error 352.

Commands run one at a time (one lock) through ``labkit.engine.commands.dispatch.run_command``, except hello and
isMaster, which read no data and are answered at once. Awaitable hellos
(``topologyVersion`` + ``maxAwaitTimeMS``, the drivers' streaming monitor) wait outside the lock; with
exhaustAllowed they stream replies flagged moreToCome until the connection closes.

There is no authentication and no TLS: it binds to loopback unless told otherwise, and the data live only as
long as the process.
"""
from __future__ import annotations

import socket
import struct
import sys
import threading
from typing import Any

import bson
from bson.codec_options import CodecOptions, DatetimeConversion

from ..base.errors import for_served_client
from ..commands import dispatch as commands
from ..service.boundary import lock_for_store
from ..catalog.ttl import is_served_engine  # noqa: F401  (defined in ttl.py, which ttl_pass uses; exported here)

OP_REPLY = 1
OP_QUERY = 2004
OP_COMPRESSED = 2012
OP_MSG = 2013

_CHECKSUM_PRESENT = 1
_MORE_TO_COME = 1 << 1
_EXHAUST_ALLOWED = 1 << 16
_HEADER = struct.Struct("<iiii")
_MAX_INCOMING = commands.MAX_MESSAGE + 16 * 1024 * 1024  # generous: drivers split at maxMessageSizeBytes

CODEC = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO)
_HELLO_NAMES = ("hello", "isMaster", "ismaster")
# Handshakes read no data: answered without waiting for the engine, so a driver's monitor and a new
# connection's handshake never stall behind a long aggregation (the driver would time out and cancel it).
_LIGHT_COMMANDS = _HELLO_NAMES
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class ProtocolError(Exception):
    """A malformed message: the connection is closed (as the server does)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    return host in _LOOPBACK or host.startswith("127.")


# ---------------------------------------------------------------------------------------------- parsing
def parse_op_msg(payload: bytes) -> tuple[int, dict]:
    """(flagBits, command) of an OP_MSG body (the bytes after the header); document sequences folded in."""
    if len(payload) < 5:
        raise ProtocolError("OP_MSG too short")
    flags = struct.unpack_from("<I", payload, 0)[0]
    end = len(payload) - (4 if flags & _CHECKSUM_PRESENT else 0)
    pos = 4
    body: dict | None = None
    seqs: list[tuple[str, list]] = []
    while pos < end:
        kind = payload[pos]
        pos += 1
        if kind == 0:
            (ln,) = struct.unpack_from("<i", payload, pos)
            if ln < 5 or pos + ln > end:
                raise ProtocolError("invalid OP_MSG body section")
            if body is not None:
                raise ProtocolError("OP_MSG has more than one body section")
            body = bson.decode(payload[pos:pos + ln], codec_options=CODEC)
            pos += ln
        elif kind == 1:
            (size,) = struct.unpack_from("<i", payload, pos)
            sec_end = pos + size
            if size < 5 or sec_end > end:
                raise ProtocolError("invalid OP_MSG document sequence")
            nul = payload.index(b"\0", pos + 4, sec_end)
            ident = payload[pos + 4:nul].decode("utf-8")
            seqs.append((ident, bson.decode_all(payload[nul + 1:sec_end], codec_options=CODEC)))
            pos = sec_end
        else:
            raise ProtocolError("unknown OP_MSG section kind %d" % kind)
    if body is None:
        raise ProtocolError("OP_MSG without a body section")
    for ident, docs in seqs:
        if ident in body:
            raise ProtocolError("duplicate field %s in OP_MSG body and document sequence" % ident)
        body[ident] = docs
    return flags, body


def parse_op_query(payload: bytes) -> tuple[str, dict]:
    """(fullCollectionName, query document) of an OP_QUERY body; a ``$query`` wrapper is unwrapped."""
    nul = payload.index(b"\0", 4)
    ns = payload[4:nul].decode("utf-8")
    pos = nul + 1 + 8  # numberToSkip, numberToReturn
    (ln,) = struct.unpack_from("<i", payload, pos)
    query = bson.decode(payload[pos:pos + ln], codec_options=CODEC)
    if "$query" in query and isinstance(query["$query"], dict):
        query = query["$query"]
    return ns, query


def op_msg(request_id: int, response_to: int, doc: Any, flags: int = 0) -> bytes:
    """An OP_MSG message with one body section."""
    body = bson.encode(doc, codec_options=CODEC)
    payload = struct.pack("<I", flags) + b"\0" + body
    return _HEADER.pack(16 + len(payload), request_id, response_to, OP_MSG) + payload


def op_reply(request_id: int, response_to: int, doc: Any, flags: int = 0) -> bytes:
    """An OP_REPLY message carrying one document (responseFlags, cursorID 0, startingFrom 0, numberReturned 1)."""
    body = bson.encode(doc, codec_options=CODEC)
    payload = struct.pack("<iqii", flags, 0, 0, 1) + body
    return _HEADER.pack(16 + len(payload), request_id, response_to, OP_REPLY) + payload


class _Reader:
    """A connection's incoming bytes, read in large pieces: a header and its message usually arrive in one
    ``recv`` (one system call per request instead of two); what follows the message waits for the next read."""

    __slots__ = ("sock", "buf")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def read(self, n: int) -> bytes:
        """Exactly ``n`` bytes (ConnectionError when the peer closes first)."""
        buf = self.buf
        while len(buf) < n:
            b = self.sock.recv(min(max(n - len(buf), 1 << 16), 1 << 20))
            if not b:
                raise ConnectionError("closed")
            buf += b
        out = bytes(buf[:n])
        del buf[:n]
        return out


# ---------------------------------------------------------------------------------------------- server
class Server:
    """A wire-protocol server over one EmbeddedClient. Use ``start()``/``stop()`` or ``with``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 27017, client: Any = None,
                 allow_remote: bool = False) -> None:
        if not is_loopback(host) and not allow_remote:
            raise ValueError("refusing to listen on %r: the served engine has no authentication; pass "
                             "--allow-remote (allow_remote=True) to listen beyond this machine" % host)
        if client is None:
            from .. import EmbeddedClient
            client = EmbeddedClient()
        self.client = client
        self.host = host
        self._requested_port = port
        self._sock: socket.socket | None = None
        self._stopped = threading.Event()
        self._closed = False
        # one command at a time: the engine's own store lock, so that a write waiting for a transaction
        # (boundary.py) releases it for the connection that will commit or abort that transaction
        store = getattr(self.client, "_store", None)  # a simulated mongos (s/) has none: its shards have theirs
        self._lock = lock_for_store(store) if store is not None else threading.RLock()
        self._ctx_lock = threading.RLock()  # the server context's counters and clock (taken inside _lock too)
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._ids = iter(range(1, 1 << 31))
        self._ids_lock = threading.Lock()
        self.context: commands.ServerContext | None = None

    # -- lifecycle ------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port listened on (the one picked by the system for port 0)."""
        if self._sock is None:
            return self._requested_port
        return self._sock.getsockname()[1]

    @property
    def advertised_host(self) -> str:
        if self.host in ("0.0.0.0", "::", ""):
            return socket.gethostname()
        return "127.0.0.1" if self.host == "localhost" else self.host

    @property
    def uri(self) -> str:
        """The plain URI (drivers discover the one-member replica set)."""
        return "mongodb://%s:%d" % (_uri_host(self.advertised_host), self.port)

    @property
    def direct_uri(self) -> str:
        """The URI with ``directConnection=true`` (no replica-set discovery; what mongosh and Compass use)."""
        return "mongodb://%s:%d/?directConnection=true" % (_uri_host(self.advertised_host), self.port)

    def start(self) -> "Server":
        """Bind and start accepting connections in a background thread."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._requested_port))
        except OSError:
            sock.close()
            raise
        sock.listen(128)
        sock.settimeout(0.25)
        self._sock = sock
        self.context = commands.ServerContext(self.advertised_host, self.port)
        t = threading.Thread(target=self._accept_loop, name="labkit-wire-accept", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def serve_forever(self) -> None:
        """Block until ``stop()`` is called (from a signal handler or another thread)."""
        while not self._stopped.wait(0.5):
            pass

    def stop(self) -> None:
        """Stop accepting, close every connection, wait for the threads."""
        if self._closed:
            return
        self._closed = True
        self._stopped.set()
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        with self._conns_lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                c.close()
            except OSError:
                pass
        me = threading.current_thread()
        for t in self._threads:
            if t is not me:
                t.join(timeout=5)
        if self.context is not None:
            with self._lock:
                self.context.end_all_sessions()

    def __enter__(self) -> "Server":
        if self._sock is None:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- connections ----------------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        assert self._sock is not None
        while not self._stopped.is_set():
            try:
                conn, _addr = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            conn.settimeout(None)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._conns_lock:
                self._conns.add(conn)
            t = threading.Thread(target=self._serve_connection, args=(conn,), name="labkit-wire-conn",
                                 daemon=True)
            t.start()
            self._threads = [x for x in self._threads if x.is_alive()] + [t]

    def _next_id(self) -> int:
        with self._ids_lock:
            return next(self._ids)

    def _serve_connection(self, conn: socket.socket) -> None:
        ctx = self.context
        assert ctx is not None
        with self._ctx_lock:
            conn_id = ctx.next_connection_id()
            ctx.connections += 1
            try:
                ctx.connected(conn_id, conn.getpeername())
            except OSError:
                ctx.connected(conn_id, ("", 0))
        reader = _Reader(conn)
        try:
            while not self._stopped.is_set():
                header = reader.read(16)
                length, request_id, _response_to, opcode = _HEADER.unpack(header)
                if length < 16 or length > _MAX_INCOMING:
                    raise ProtocolError("message length %d out of range" % length)
                payload = reader.read(length - 16)
                if opcode == OP_MSG:
                    self._handle_msg(conn, conn_id, request_id, payload)
                elif opcode == OP_QUERY:
                    self._handle_query(conn, conn_id, request_id, payload)
                else:
                    # OP_COMPRESSED is never negotiated (no compressors announced); the rest were removed.
                    raise ProtocolError("unsupported opCode %d" % opcode)
        except (ConnectionError, OSError, ProtocolError, ValueError, bson.errors.BSONError):
            pass
        except Exception as e:  # noqa: BLE001 - a bug here must not take the server down; say so and drop
            print("labkit serve: closing connection %d after an internal error: %s: %s"
                  % (conn_id, type(e).__name__, e), file=sys.stderr)
        finally:
            with self._conns_lock:
                self._conns.discard(conn)
            with self._ctx_lock:
                ctx.connections -= 1
                ctx.disconnected(conn_id)
            try:
                conn.close()
            except OSError:
                pass

    def _dispatch(self, db_name: str, cmd: dict, ctx: Any, conn_id: int) -> dict:
        """The command layer, or a sharded cluster's router when serving one (``labkit.engine.s``)."""
        route = getattr(type(self.client), "route_command", None)  # a client's attributes are its databases
        if route is not None:
            return route(self.client, db_name, cmd, ctx, CODEC, connection_id=conn_id)
        return commands.run_command(self.client, db_name, cmd, ctx, CODEC, connection_id=conn_id)

    def _run(self, db_name: str, cmd: dict, conn_id: int) -> dict:
        ctx = self.context
        assert ctx is not None
        name = next(iter(cmd), None)
        if name in _LIGHT_COMMANDS:
            with self._ctx_lock:
                reply = self._dispatch(db_name, cmd, ctx, conn_id)
                if name in _HELLO_NAMES and cmd.get("helloOk"):
                    reply["helloOk"] = True
                reply.update(ctx.gossip())
            return reply
        ctx.begin(conn_id, db_name, cmd)  # $currentOp shows it, waiting for the engine or running
        try:
            def run() -> dict:
                with self._lock:
                    return self._dispatch(db_name, cmd, ctx, conn_id)

            # an awaitData getMore (change stream, tailable cursor) with nothing yet waits without the lock
            reply = commands.await_more(run(), run, self._stopped)
        finally:
            ctx.end(conn_id)
        with self._lock:
            for_served_client(reply)  # "not modelled" advice for mongosh / Compass / drivers, not MONGODB_URI
            with self._ctx_lock:
                reply.update(ctx.gossip())
        return reply

    def _encode_or_error(self, make: Any, request_id: int, reply: dict, flags: int = 0) -> bytes:
        try:
            return make(self._next_id(), request_id, reply, flags)
        except (bson.errors.InvalidDocument, OverflowError, ValueError) as e:
            err = commands.error_reply(commands.CommandError("the reply could not be encoded as BSON: %s" % e, 1))
            return make(self._next_id(), request_id, err, 0)

    def _handle_msg(self, conn: socket.socket, conn_id: int, request_id: int, payload: bytes) -> None:
        try:
            flags, cmd = parse_op_msg(payload)
        except (ProtocolError, bson.errors.BSONError, struct.error, ValueError) as e:
            reply = commands.error_reply(commands.CommandError("invalid OP_MSG: %s" % e, 9))
            conn.sendall(op_msg(self._next_id(), request_id, reply))
            return
        db_name = cmd.pop("$db", None) if isinstance(cmd.get("$db"), str) else None
        if db_name is None:
            reply = commands.error_reply(commands.CommandError("OP_MSG requests require a $db argument", 40571))
            conn.sendall(op_msg(self._next_id(), request_id, reply))
            return
        cmd["$db"] = db_name
        name = next(iter(cmd))
        if name in _HELLO_NAMES and "topologyVersion" in cmd and "maxAwaitTimeMS" in cmd:
            self._awaitable_hello(conn, conn_id, request_id, db_name, cmd, bool(flags & _EXHAUST_ALLOWED))
            return
        reply = self._run(db_name, cmd, conn_id)
        if flags & _MORE_TO_COME:
            return  # unacknowledged (w: 0): the client expects no reply
        conn.sendall(self._encode_or_error(op_msg, request_id, reply))

    def _awaitable_hello(self, conn: socket.socket, conn_id: int, request_id: int, db_name: str, cmd: dict,
                         exhaust: bool) -> None:
        """The streaming protocol: answer when the topology changes or after maxAwaitTimeMS (it never changes
        here); with exhaustAllowed keep answering (moreToCome) until the client goes away."""
        ctx = self.context
        assert ctx is not None
        tv = cmd.get("topologyVersion") or {}
        wait = max(0, int(cmd.get("maxAwaitTimeMS") or 0)) / 1000.0
        same = isinstance(tv, dict) and tv.get("processId") == ctx.process_id
        respond_to = request_id
        first = True
        while True:
            if (not first or same) and self._stopped.wait(wait):
                return
            first = False
            reply = self._run(db_name, cmd, conn_id)
            msg_id = self._next_id()
            flags = _MORE_TO_COME if exhaust else 0
            conn.sendall(op_msg(msg_id, respond_to, reply, flags))
            if not exhaust:
                return
            respond_to = msg_id

    def _handle_query(self, conn: socket.socket, conn_id: int, request_id: int, payload: bytes) -> None:
        try:
            ns, query = parse_op_query(payload)
        except (ValueError, struct.error, bson.errors.BSONError) as e:
            conn.sendall(op_reply(self._next_id(), request_id, {"$err": "invalid OP_QUERY: %s" % e, "code": 9}, 2))
            return
        db_name, _, coll = ns.partition(".")
        name = next(iter(query), "")
        if coll != "$cmd":
            doc = {"$err": "OP_QUERY is no longer supported. The client driver may require an upgrade.",
                   "code": 5739101, "ok": 0.0}
            conn.sendall(op_reply(self._next_id(), request_id, doc, 2))  # QueryFailure
            return
        if name not in _HELLO_NAMES:
            reply = commands.error_reply(commands.CommandError(
                "Unsupported OP_QUERY command: %s. The client driver may require an upgrade. For more details see "
                "https://dochub.mongodb.org/core/legacy-opcode-removal" % name, 352))
            conn.sendall(op_reply(self._next_id(), request_id, reply))
            return
        cmd = dict(query)
        cmd["$db"] = db_name
        reply = self._run(db_name, cmd, conn_id)
        conn.sendall(self._encode_or_error(op_reply, request_id, reply))


def _uri_host(host: str) -> str:
    return "[%s]" % host if ":" in host else host



def serve_in_thread(host: str = "127.0.0.1", port: int = 0, client: Any = None,
                    allow_remote: bool = False, shards: int | None = None) -> Server:
    """Start serving an EmbeddedClient (a new one unless given; with ``shards``, a new simulated sharded cluster
    served as a mongos) in background threads; the started Server.

    ``server.port`` / ``server.uri`` / ``server.direct_uri`` say where; ``server.stop()`` or ``with`` ends it."""
    if shards is not None and client is None:
        from ..s.router import Mongos
        client = Mongos(shards)
    server = Server(host, port, client=client, allow_remote=allow_remote).start()
    if getattr(type(server.client), "set_address", None) is not None:
        server.client.set_address(server.advertised_host, server.port)
    return server


def serve(host: str = "127.0.0.1", port: int = 27017, allow_remote: bool = False, out: Any = None,
          argv: list[str] | None = None, shards: int | None = None) -> int:
    """Run the server in the foreground until Ctrl-C or SIGTERM (``python -m labkit serve``); exit status.
    ``shards``: serve a simulated sharded cluster of that many shards as a ``mongos``."""
    import signal
    out = out or sys.stdout
    try:
        client = None
        if shards is not None:
            from ..s.router import Mongos
            client = Mongos(shards)
        server = Server(host, port, client=client, allow_remote=allow_remote)
        server.start()
        if shards is not None:
            client.set_address(server.advertised_host, server.port)
    except ValueError as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    except OSError as e:
        print("error: cannot listen on %s:%d: %s" % (host, port, e.strerror or e), file=sys.stderr)
        return 1
    assert server.context is not None
    server.context.argv = list(argv or [])
    if not is_loopback(host):
        print("WARNING: listening on %s: anyone who can reach this machine can read and change the data "
              "(no authentication, no TLS)." % host, file=out)
    if shards is not None:
        print("Schema Lab simulated sharded cluster (%d shards, MongoDB 8.0 rules) serving as a mongos on %s:%d"
              % (shards, server.host, server.port), file=out)
        print("  connect with:  %s" % server.uri, file=out)
        print("  e.g.  mongosh \"%s\"   |   export MONGODB_URI=%s" % (server.uri, server.uri), file=out)
    else:
        print("Schema Lab embedded engine (MongoDB 8.0 look-alike) serving on %s:%d" % (server.host, server.port),
              file=out)
        print("  connect with:  %s" % server.direct_uri, file=out)
        print("  or (drivers):  %s" % server.uri, file=out)
        print("  e.g.  mongosh \"%s\"   |   export MONGODB_URI=%s" % (server.direct_uri, server.uri), file=out)
    print("Data live in memory until this process stops. Ctrl-C to stop.", file=out, flush=True)

    def _term(signum: int, frame: Any) -> None:
        server._stopped.set()

    main = threading.current_thread() is threading.main_thread()  # signal handlers: main thread only
    old = signal.signal(signal.SIGTERM, _term) if main else None
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if main:
            signal.signal(signal.SIGTERM, old)
        server.stop()
        print("Stopped.", file=out, flush=True)
    return 0


__all__ = ["Server", "serve_in_thread", "serve", "is_served_engine", "parse_op_msg", "parse_op_query", "op_msg",
           "op_reply", "is_loopback"]
