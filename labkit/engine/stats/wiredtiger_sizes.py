"""The engine's model of WiredTiger's file sizes: what ``collStats``/``dbStats``/``$collStats`` report as
``storageSize``, ``freeStorageSize``, ``indexSizes`` and ``totalIndexSize``.

On a server these are the sizes of the collection's and each index's ``.wt`` file (``storageSize`` is the
block manager's "file size in bytes", ``freeStorageSize`` its "file bytes available for reuse": SERVER-42037,
``src/mongo/db/stats/storage_stats.cpp``), while ``size`` is the uncompressed BSON size of the documents
(manual, "collStats" > Output). The engine has no files, so it computes the file a server would write, from
the data, each time the figures are asked for (cached until the collection's next write):

* **Collections** (``WiredTigerRecordStore::generateCreateString`` in
  ``src/mongo/db/storage/wiredtiger/wiredtiger_record_store.cpp``; ``wiredtiger_global_options.idl``):
  ``key_format=q`` (the record id), ``value_format=u`` (the BSON document), ``split_pct=90``,
  ``block_compressor=snappy`` (the ``storage.wiredTiger.collectionConfig.blockCompressor`` default; time-series
  buckets collections use ``zstd``), ``prefix_compression=false``, and WiredTiger's defaults
  ``leaf_page_max=32KB``, ``internal_page_max=4KB``, ``allocation_size=4KB``. Documents are packed in record
  id order into leaf pages filled to ``split_pct`` of ``leaf_page_max`` (what reconciliation writes when it
  splits a page), each page is compressed with the real snappy (``cramjam``) and written as a block rounded up
  to the allocation unit.
* **Indexes** (``WiredTigerIndex::generateCreateString`` in ``wiredtiger_index.cpp``):
  ``internal_page_max=16k,leaf_page_max=16k``, ``prefix_compression=true``, no block compressor. Each entry is
  the key's KeyString (``src/mongo/db/storage/key_string/key_string.cpp``: one type byte per value, integers
  in as few bytes as their magnitude needs, strings NUL-terminated, the ``kEnd`` byte 4) followed, in a
  non-unique index, by the record id (2 to 10 bytes); a unique index keeps the record id in the entry's value.
  Keys share their common prefix with the key before them on the page (WiredTiger's row-store prefix
  compression, used when at least ``prefix_compression_min=4`` bytes are shared).
* **The file**: a 4 KB descriptor block, the leaf blocks, the internal pages above them (one address cell and
  one separator key per child), and the checkpoint's extent lists (``alloc``, ``discard`` and ``avail``, one
  allocation unit each: ``src/block/block_ckpt.c`` in WiredTiger). An empty collection or index is its
  descriptor alone: 4096 bytes, as a server reports for a new collection and its ``_id`` index.
* **Free space**: WiredTiger reuses the blocks of deleted data but does not shrink the file (manual,
  "compact"). The engine keeps each file's high-water mark: when the computed size falls below it,
  ``storageSize`` stays at the mark and the difference is ``freeStorageSize``. The engine "checkpoints" when
  the figures are asked for: a file grows to what was last computed.

Not modelled: the time-window cells of pages written before the oldest timestamp moves on, overflow items,
collation keys (a collated string counts as its UTF-8 bytes, an ICU sort key is longer), and when a checkpoint
runs (a server's figures move every 60 seconds; these are the figures after one).
"""
from __future__ import annotations

import datetime
import math
import struct
from typing import Any

import bson
from bson import Binary, Code, Decimal128, Int64, ObjectId, Regex, Timestamp
from bson.max_key import MaxKey
from bson.min_key import MinKey

from ..bson import values as V
from ..index.hashed import new_index

ALLOCATION_SIZE = 4096          # WiredTiger's default allocation_size=4KB
DESCRIPTOR_BYTES = ALLOCATION_SIZE  # block 0 of every file: the file descriptor, one allocation unit
CHECKPOINT_EXTENT_LISTS = 3     # a checkpoint writes its alloc, discard and avail extent lists (block_ckpt.c)
SPLIT_PCT = 90                  # split_pct=90 for collections (record store) and WiredTiger's default for indexes
PAGE_HEADER_BYTES = 28 + 12     # WT_PAGE_HEADER (28 B) + WT_BLOCK_HEADER (12 B)
COMPRESS_SKIP = 64              # WT_BLOCK_COMPRESS_SKIP: the first 64 bytes of a page are written uncompressed
COMPRESSED_LENGTH_PREFIX = 8    # WiredTiger's snappy and zstd extensions store the compressed length first
PREFIX_COMPRESSION_MIN = 4      # prefix_compression_min=4
ADDRESS_CELL_BYTES = 12         # an internal page's child address cell: descriptor, length, offset/size/checksum

COLLECTION = {"leaf_page_max": 32 * 1024, "internal_page_max": 4 * 1024, "compressor": "snappy"}
INDEX = {"leaf_page_max": 16 * 1024, "internal_page_max": 16 * 1024, "compressor": None}


def _round_up(n: int) -> int:
    return -(-n // ALLOCATION_SIZE) * ALLOCATION_SIZE


def _packed_uint_len(n: int) -> int:
    """Bytes of WiredTiger's packed unsigned integer (intpack.i): 1 byte up to 63, 2 up to 8255, else 1 + the
    bytes of ``n - 8256``."""
    if n < 64:
        return 1
    if n < 64 + 8192:
        return 2
    return 1 + max(1, ((n - 8256).bit_length() + 7) // 8)


def _cell_len(data_len: int) -> int:
    """A key or value cell: short cells (under 64 bytes) keep the length in the descriptor byte; longer ones add
    the length minus 64 as a packed integer (cell.i, ``WT_CELL_SIZE_ADJUST``)."""
    return 1 + data_len if data_len < 64 else 1 + _packed_uint_len(data_len - 64) + data_len


def _compressed_block(image: bytes, compressor: str | None) -> int:
    """Bytes of the block WiredTiger writes for one page image: compressed after the first 64 bytes when that
    is smaller, rounded up to the allocation unit."""
    plain = _round_up(len(image))
    if compressor is None or len(image) <= COMPRESS_SKIP:
        return plain
    body = image[COMPRESS_SKIP:]
    import cramjam  # the real snappy/zstd (a dependency: pyproject.toml); imported when sizes are first asked
    if compressor == "zstd":
        packed = len(cramjam.zstd.compress(body, level=6))  # zstdCompressionLevel default 6
    else:
        packed = len(cramjam.snappy.compress_raw(body))
    return min(plain, _round_up(COMPRESS_SKIP + COMPRESSED_LENGTH_PREFIX + packed))


def _internal_blocks(separators: list[int], page_max: int, compressor: str | None) -> int:
    """Blocks of the internal pages above ``len(separators)`` children (each child: a key cell of the given
    length and an address cell), level by level up to one root; nothing for a single child."""
    total = 0
    limit = page_max * SPLIT_PCT // 100
    while len(separators) > 1:
        parents: list[int] = []
        size = PAGE_HEADER_BYTES
        first = None
        for sep in separators:
            cell = _cell_len(sep) + ADDRESS_CELL_BYTES
            if size + cell > limit and size > PAGE_HEADER_BYTES:
                total += _round_up(size)
                parents.append(first)
                size = PAGE_HEADER_BYTES
                first = None
            size += cell
            if first is None:
                first = sep
        total += _round_up(size)
        parents.append(first if first is not None else 1)
        separators = parents
    return total


def _file_bytes(leaf_blocks: int, separators: list[int], config: dict) -> int:
    if not leaf_blocks:
        return DESCRIPTOR_BYTES
    return (DESCRIPTOR_BYTES + leaf_blocks + _internal_blocks(separators, config["internal_page_max"], None)
            + CHECKPOINT_EXTENT_LISTS * ALLOCATION_SIZE)


# ---------------------------------------------------------------------------------------------- record store
def _packed_int(n: int) -> bytes:
    """WiredTiger's packed signed integer for a positive record id (``key_format=q``)."""
    if n < 64:
        return bytes([0x80 | n])
    if n < 64 + 8192:
        m = n - 64
        return bytes([0xC0 | (m >> 8), m & 0xFF])
    m = n - 8256
    b = m.to_bytes(max(1, (m.bit_length() + 7) // 8), "big")
    return bytes([0xE0 | len(b)]) + b


def record_store_bytes(docs: dict[int, dict], compressor: str = "snappy") -> tuple[int, int]:
    """(file bytes, BSON bytes): the file a WiredTiger record store would hold for ``docs`` (record id ->
    document) after a checkpoint, and the documents' uncompressed size."""
    limit = COLLECTION["leaf_page_max"] * SPLIT_PCT // 100
    encode = bson.encode
    blocks = 0
    separators: list[int] = []
    parts: list[bytes] = []
    size = 0
    data_bytes = 0
    header = bytes(PAGE_HEADER_BYTES)
    for rid in sorted(docs):
        data = encode(docs[rid])
        key = _packed_int(rid)
        n = len(data)
        data_bytes += n
        vhead = b"\x05" + (b"" if n < 64 else _packed_int(n - 64))  # descriptor + length (a stand-in byte)
        cell = 1 + len(key) + len(vhead) + n
        if parts and PAGE_HEADER_BYTES + size + cell > limit:
            blocks += _compressed_block(header + b"".join(parts), compressor)
            parts, size = [], 0
        if not parts:
            separators.append(len(key))
        parts.append(b"\x01" + key + vhead + data)
        size += cell
    if parts:
        blocks += _compressed_block(header + b"".join(parts), compressor)
    return _file_bytes(blocks, separators, COLLECTION), data_bytes


# ---------------------------------------------------------------------------------------------- KeyString
_K_MINKEY, _K_UNDEFINED, _K_NULL, _K_NUMERIC, _K_STRING, _K_OBJECT, _K_ARRAY = 10, 15, 20, 30, 60, 70, 80
_K_BINDATA, _K_OID, _K_BOOL, _K_DATE, _K_TIMESTAMP, _K_REGEX, _K_CODE, _K_MAXKEY = 90, 100, 110, 120, 130, 140, 160, 240
_K_NAN, _K_NEG_LARGE, _K_NEG_8, _K_NEG_1, _K_NEG_SMALL = 30, 31, 32, 39, 40
_K_ZERO, _K_POS_SMALL, _K_POS_1, _K_POS_8, _K_POS_LARGE = 41, 42, 43, 50, 51
K_END = 4  # kEnd: closes the key (the discriminator of a stored key)
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_TZ = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_INV = bytes(255 - i for i in range(256))
_D = struct.Struct(">d")
_Q = struct.Struct(">Q")


def _string_like(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff") + b"\x00"


def _integer(n: int) -> bytes:
    """``_appendInteger``: the magnitude shifted left one bit, in as few big-endian bytes as it needs, after a
    type byte that says how many (bytes inverted for negative numbers)."""
    if n == 0:
        return bytes([_K_ZERO])
    if n < -(1 << 63) or n >= (1 << 63):
        return _double(float(n))
    mag = abs(n) << 1
    width = (mag.bit_length() + 7) // 8
    body = mag.to_bytes(width, "big")
    if n < 0:
        return bytes([_K_NEG_1 - (width - 1)]) + body.translate(_INV)
    return bytes([_K_POS_1 + (width - 1)]) + body


def _double(x: float) -> bytes:
    """``_appendDoubleWithoutTypeBits`` (KeyString V1): integral doubles as integers, others as a type byte and
    eight bytes."""
    if math.isnan(x):
        return bytes([_K_NAN])
    if x == 0.0:
        return bytes([_K_ZERO])
    neg = x < 0
    mag = -x if neg else x
    if mag < 1.0:
        enc = (_Q.unpack(_D.pack(mag))[0] << 2) & 0xFFFFFFFFFFFFFFFF
        body = _Q.pack(enc)
        return bytes([_K_NEG_SMALL if neg else _K_POS_SMALL]) + (body.translate(_INV) if neg else body)
    if mag < 2.0 ** 63:
        ip = int(mag)
        if ip == mag:
            return _integer(-ip if neg else ip)
        frac_bytes = (64 - (ip << 1).bit_length()) // 8
        ctype = _K_NEG_8 + frac_bytes if neg else _K_POS_8 - frac_bytes
        enc = (int(mag * (256 ** frac_bytes)) + ((ip + 1) << (frac_bytes * 8))) & 0xFFFFFFFFFFFFFFFF
        body = _Q.pack(enc)
        return bytes([ctype]) + (body.translate(_INV) if neg else body)
    if math.isinf(mag):
        body = b"\xff" * 8
    else:
        body = _Q.pack((_Q.unpack(_D.pack(mag))[0] << 1) & 0x7FFFFFFFFFFFFFFF)
    return bytes([_K_NEG_LARGE if neg else _K_POS_LARGE]) + (body.translate(_INV) if neg else body)


def _date_ms(v: datetime.datetime) -> int:
    d = v - (_EPOCH_TZ if v.tzinfo is not None else _EPOCH)
    return (d.days * 86400 + d.seconds) * 1000 + d.microseconds // 1000


def keystring(v: Any) -> bytes:
    """The KeyString bytes of one index key value (``BuilderBase::_appendBsonValue``); missing is null."""
    t = type(v)
    if t is str:
        return bytes([_K_STRING]) + _string_like(v)
    if t is bool:
        return bytes([_K_BOOL + (1 if v else 0)])
    if t is int or t is Int64:
        return _integer(int(v))
    if t is float:
        return _double(v)
    if t is ObjectId:
        return bytes([_K_OID]) + v.binary
    if v is None:
        return bytes([_K_NULL])
    if isinstance(v, datetime.datetime):
        return bytes([_K_DATE]) + _Q.pack((_date_ms(v) ^ (1 << 63)) & 0xFFFFFFFFFFFFFFFF)
    if isinstance(v, dict):
        out = [bytes([_K_OBJECT])]
        for name, x in v.items():
            inner = keystring(x)
            out.append(bytes([V.canonical_type(x)]) + _string_like(str(name)) + inner)
        out.append(b"\x00")
        return b"".join(out)
    if isinstance(v, (list, tuple)):
        return bytes([_K_ARRAY]) + b"".join(keystring(x) for x in v) + b"\x00"
    if isinstance(v, Decimal128):
        d = v.to_decimal()
        f = float(d)
        exact = not d.is_finite() or d == type(d)(f)
        return _double(f) + (b"" if exact else bytes(8))  # an inexact decimal adds a continuation
    if isinstance(v, (bytes, Binary)):
        sub = getattr(v, "subtype", 0)
        size = bytes([len(v)]) if len(v) < 0xFF else b"\xff" + len(v).to_bytes(4, "big")
        return bytes([_K_BINDATA]) + size + bytes([sub]) + bytes(v)
    if isinstance(v, Timestamp):
        return bytes([_K_TIMESTAMP]) + _Q.pack((v.time << 32) | v.inc)
    if isinstance(v, Code):
        return bytes([_K_CODE]) + _string_like(str(v))
    if isinstance(v, (Regex, V.RE_TYPE)):
        flags = v.flags if isinstance(v.flags, str) else ""
        return bytes([_K_REGEX]) + v.pattern.encode() + b"\x00" + flags.encode() + b"\x00"
    if isinstance(v, MinKey):
        return bytes([_K_MINKEY])
    if isinstance(v, MaxKey):
        return bytes([_K_MAXKEY])
    if isinstance(v, V.Undefined):
        return bytes([_K_UNDEFINED])
    return bytes([_K_NULL])


def _type_bits(v: Any) -> int:
    """Bits of TypeBits a value adds that are not zero (int32 and strings add zero bits, which are not stored):
    a double or a 64-bit integer makes the TypeBits non-zero."""
    t = type(v)
    if t is float or t is Int64 or isinstance(v, Decimal128):
        return 2
    if t is int and not -(1 << 31) <= v < (1 << 31):
        return 2
    if isinstance(v, dict):
        return sum(_type_bits(x) for x in v.values())
    if isinstance(v, (list, tuple)):
        return sum(_type_bits(x) for x in v)
    return 0


def record_id_encoding(rid: int) -> bytes:
    """``_appendRecordIdLong``: the number of bytes between the first and the last (0-7) in the high 3 bits of
    the first byte and the low 3 bits of the last; the record id's bits big-endian in between (sorts like it)."""
    value = max(rid, 0)
    bits = value.bit_length()
    extra = 0 if bits <= 10 else (bits - 3) // 8
    return ((extra << (8 * extra + 13)) | (value << 3) | extra).to_bytes(extra + 2, "big")


def record_id_bytes(rid: int) -> int:
    """``_appendRecordIdLong``: 2 bytes carry 10 bits of the record id, each further byte 8 more."""
    return 2 + max(0, (max(rid, 0).bit_length() - 10 + 7) // 8)


# ---------------------------------------------------------------------------------------------- indexes
class _KeyValues:
    """Key function for a shadow index: the KeyString of each value, with its TypeBits noted."""

    def __init__(self) -> None:
        self.typebits = 0

    def __call__(self, v: Any) -> bytes:
        if type(v) is not str:
            self.typebits += _type_bits(v)
        return keystring(v)


def index_bytes(ix: Any, docs: dict[int, dict]) -> int:
    """The file a WiredTiger index with ``ix``'s spec would hold for ``docs`` after a checkpoint."""
    kv = _KeyValues()
    shadow = new_index(ix.spec, keyfunc=kv)  # the same key generation (multikey, sparse, partial, hashed)
    spec = ix.spec
    unique = spec.unique
    one = (spec.simple and len(spec.fields) == 1 and spec.partial is None and not spec.sparse
           and not getattr(ix, "hashed", False))
    field, desc = spec.fields[0], spec.desc[0]
    cache: dict = {}
    end = bytes([K_END])
    rid_enc = record_id_encoding
    entries: list[tuple[bytes, int]] = []  # (key as stored, bytes of the value)
    add = entries.append
    for rid in sorted(docs):
        doc = docs[rid]
        if one:  # one top-level field, not an array: its KeyString, without building an index key
            v = doc.get(field)
            t = type(v)
            if t is str or t is ObjectId or (t is int and -(1 << 31) <= v < (1 << 31)) or v is None:
                k = cache.get(v) if not unique else None
                if k is None:
                    k = keystring(v)
                    k = (k.translate(_INV) if desc else k) + end
                    if not unique and len(cache) < 65536:
                        cache[v] = k
                if unique:
                    bits = rid.bit_length()
                    add((k, 2 if bits <= 10 else 2 + (bits - 3) // 8))
                else:
                    bits = rid.bit_length()
                    extra = 0 if bits <= 10 else (bits - 3) // 8
                    add((k + ((extra << (8 * extra + 13)) | (rid << 3) | extra).to_bytes(extra + 2, "big"), 0))
                continue
        before = kv.typebits
        keys = shadow.keys_for(doc)[0]
        tb = kv.typebits - before
        tb_bytes = 0 if tb == 0 else (1 if tb <= 7 else 1 + (tb + 7) // 8)
        for key in keys:
            k = b"".join(key) + end
            if unique:
                add((k, record_id_bytes(rid) + tb_bytes))
            else:
                add((k + rid_enc(rid), tb_bytes))
    entries.sort()  # KeyString order is the index's order (the record id encoding sorts like the record id)
    return _pack_index_pages(entries)


def _pack_index_pages(entries: list[tuple[bytes, int]]) -> int:
    """Pack sorted index entries into leaf pages with prefix compression; the file's bytes."""
    limit = INDEX["leaf_page_max"] * SPLIT_PCT // 100
    width = 256  # a prefix is at most 255 bytes: comparing the first 256 bytes of two keys is enough
    from_bytes = int.from_bytes
    blocks = 0
    separators: list[int] = []
    size = PAGE_HEADER_BYTES
    prev_int = 0
    prev_len = 0
    page_open = False
    for k, value_len in entries:
        n = len(k)
        cur = from_bytes(k[:width].ljust(width, b"\0"), "big")
        shared = width - ((cur ^ prev_int).bit_length() + 7) // 8
        if shared > n:
            shared = n
        if shared > prev_len:
            shared = prev_len
        value_cell = (1 + value_len if value_len < 64 else _cell_len(value_len)) if value_len else 0
        if page_open:
            kept = shared if PREFIX_COMPRESSION_MIN <= shared <= 255 else (255 if shared > 255 else 0)
            suffix = n - kept
            cell = (1 + suffix if suffix < 64 else _cell_len(suffix)) + (1 if kept else 0) + value_cell
            if size + cell > limit:
                blocks += _round_up(size)
                size = PAGE_HEADER_BYTES
                page_open = False
        if not page_open:
            # the parent's separator: internal_key_truncate keeps the shortest prefix that still separates
            separators.append(min(n, shared + 1))
            cell = (1 + n if n < 64 else _cell_len(n)) + value_cell
            page_open = True
        size += cell
        prev_int, prev_len = cur, n
    if page_open:
        blocks += _round_up(size)
    return _file_bytes(blocks, separators, INDEX)


# ---------------------------------------------------------------------------------------------- files
class FileSizes:
    """A collection's files as last computed: the record store and each index, with their high-water marks."""

    def __init__(self) -> None:
        self.key: Any = None
        self.data = 0
        self.data_mark = 0
        self.size = 0  # the documents' BSON bytes (collStats ``size``)
        self.indexes: dict[str, tuple[Any, int, int]] = {}  # name -> (index object, live bytes, high-water mark)

    def storage(self) -> tuple[int, int]:
        """(storageSize, freeStorageSize) of the record store."""
        return self.data_mark, self.data_mark - self.data

    def index_sizes(self) -> dict[str, tuple[int, int]]:
        """Index name -> (file size, bytes available for reuse)."""
        return {n: (mark, mark - live) for n, (_, live, mark) in self.indexes.items()}


def file_sizes(st: Any, compressor: str = "snappy") -> FileSizes:
    """The record store's and the indexes' file sizes of the collection store ``st``, computed from its
    documents when it was written since the last call (its ``version`` counter), else remembered."""
    fs: FileSizes | None = getattr(st, "wt_files", None)
    incarnation = getattr(st, "incarnation", 0)
    if fs is None or fs.key is None or fs.key[1] != incarnation:
        fs = FileSizes()
        st.wt_files = fs
    key = (st.version, incarnation, len(st.docs), tuple((n, id(ix)) for n, ix in st.ix.items()))
    if fs.key == key:
        return fs
    docs = st.docs
    fs.data, fs.size = record_store_bytes(docs, compressor)
    fs.data_mark = max(fs.data_mark, fs.data)
    old = fs.indexes
    fs.indexes = {}
    for name, ix in st.ix.items():
        live = index_bytes(ix, docs)
        prev = old.get(name)
        mark = max(prev[2], live) if prev is not None and prev[0] is ix else live
        fs.indexes[name] = (ix, live, mark)
    fs.key = key
    return fs


def compact(st: Any, compressor: str = "snappy") -> int:
    """Give the free space of the collection's files back (``compact``): the high-water marks fall to the
    live sizes. Returns the bytes freed."""
    fs = file_sizes(st, compressor)
    freed = (fs.data_mark - fs.data) + sum(mark - live for _, live, mark in fs.indexes.values())
    fs.data_mark = fs.data
    fs.indexes = {n: (ix, live, live) for n, (ix, live, _) in fs.indexes.items()}
    return freed


__all__: list[str] = ["file_sizes", "compact", "keystring", "record_store_bytes", "index_bytes", "FileSizes",
                      "record_id_bytes", "ALLOCATION_SIZE", "DESCRIPTOR_BYTES"]
