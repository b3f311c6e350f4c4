"""B-tree-like indexes: sorted sequences of ``(key tuple, record id)`` (``entrylist.SortedEntries``, a blocked
sorted list with O(log n)-ish insertion and deletion) searched by binary search.

Each key tuple holds one order-preserving byte string per index field (inverted for descending fields),
so Python's C-level tuple/bytes comparison gives MongoDB's index order.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable

from ..base.errors import unsupported
from ..bson import keys as K
from .entrylist import SortedEntries

KeyFunc = Callable[[Any], bytes]


def _flat_entry(entry: tuple) -> bytes:
    """One bytes string ordered like the ``(key tuple, record id)`` entry: ``keys.encode`` values are
    prefix-free (also when inverted), so their concatenation compares like the tuple; the record id is a
    fixed-width big-endian suffix. Comparing bytes is far cheaper than comparing nested tuples."""
    return b"".join(entry[0]) + entry[1].to_bytes(8, "big")


def _no_fast_keys(doc: dict) -> None:
    return None


def _cached_str_encoder() -> KeyFunc:
    """``keys.encode`` remembering recent string and integer encodings (indexed strings such as author ids, and
    small integers, repeat across documents); bounded caches, so results are exactly ``keys.encode``'s."""
    enc = K.encode
    # by exact type: plain ints only (not bools, not floats: 1, True and 1.0 are equal dict keys)
    caches: dict[type, tuple[dict, Callable[[Any], bytes]]] = {str: ({}, K._enc_s), int: ({}, enc)}
    find = caches.get

    def kf(v: Any) -> bytes:
        found = find(type(v))
        if found is None:
            return enc(v)
        cache, encode = found
        e = cache.get(v)
        if e is None:
            if len(cache) >= 65536:
                cache.clear()
            e = cache[v] = encode(v)
        return e
    return kf


def default_collation_key(value: Any, collation: dict | None = None) -> bytes:
    """Simple binary comparison (the pluggable collation seam; swap for labkit.collation later)."""
    return K.encode(value)


def gen_index_name(key: list[tuple[str, Any]]) -> str:
    return "_".join("%s_%s" % (f, d) for f, d in key)


class IndexSpec:
    """What ``listIndexes`` shows for one index."""

    def __init__(self, name: str, key: list[tuple[str, Any]], unique: bool = False, sparse: bool = False,
                 partial: dict | None = None, hidden: bool = False, expire: Any = None,
                 collation: dict | None = None, extra: dict | None = None, prepare_unique: bool = False) -> None:
        self.name = name
        self.key = [(f, d) for f, d in key]
        self.fields = [f for f, _ in self.key]
        self.parts = [f.split(".") for f in self.fields]
        self.desc = [(isinstance(d, (int, float)) and d < 0) for _, d in self.key]
        self.tops = frozenset(p[0] for p in self.parts)  # the top-level fields the keys come from
        self.simple = all(len(p) == 1 for p in self.parts)
        self.any_desc = any(self.desc)
        self.unique = bool(unique) or name == "_id_"
        self.prepare_unique = bool(prepare_unique) and not self.unique
        self.checks_dups = self.unique or self.prepare_unique  # writes refuse a new duplicate key (set_unique)
        self.sparse = bool(sparse)
        self.partial = partial
        self.hidden = bool(hidden)
        self.expire = expire
        self.collation = collation
        self.extra = extra or {}
        if partial is not None:
            from ..matcher.match import fast_matcher
            self.partial_match = fast_matcher(partial, collation)
        self.hashed = [f for f, d in self.key if d == "hashed"]  # hashed.py
        for f, d in self.key:
            if f == "$**" or f.endswith(".$**"):  # a wildcard index: the planner would never use it
                raise unsupported("Index type 'wildcard' ({%s: %r})" % (f, d),
                                  "index the fields your queries name (a compound index, or the attribute pattern's "
                                  "{k: 1, v: 1})")
            if isinstance(d, str) and d != "hashed":
                raise unsupported("Index type '%s'" % d, "$regex on a normal index for text" if d == "text" else None)

    def info(self) -> dict:
        d: dict[str, Any] = {"v": 2, "key": dict(self.key), "name": self.name}
        if self.unique and self.name != "_id_":
            d["unique"] = True
        if self.sparse:
            d["sparse"] = True
        if self.partial is not None:
            d["partialFilterExpression"] = self.partial
        if self.hidden:
            d["hidden"] = True
        if self.prepare_unique:
            d["prepareUnique"] = True
        if self.expire is not None:
            d["expireAfterSeconds"] = self.expire
        if self.collation is not None:
            d["collation"] = self.collation
        d.update(self.extra)
        return d

    def compare(self, existing: "IndexSpec") -> str:
        """How this (candidate) spec compares with an existing index, as ``IndexDescriptor::
        compareIndexOptions`` (src/mongo/db/index/index_descriptor.cpp) decides it: ``"different"`` when the
        key pattern or an option of the index signature differs (``unique``, ``sparse``, the collation, the
        partial filter after normalization; since 5.0 several indexes may share a key pattern that way),
        ``"equivalent"`` when only other options differ (``expireAfterSeconds``, ``hidden``...: the two
        cannot coexist), ``"identical"`` when those match too (name and ``v`` are not compared)."""
        if [(f, _num(d)) for f, d in self.key] != [(f, _num(d)) for f, d in existing.key]:
            return "different"
        if self.is_unique() != existing.is_unique() or self.sparse != existing.sparse:
            return "different"
        if self.collation != existing.collation:
            return "different"
        if (self.partial is None) != (existing.partial is None):
            return "different"
        if self.partial is not None:
            from ..matcher.subset import equivalent
            if not equivalent(self.partial, existing.partial):
                return "different"
        if (self.expire, self.hidden, self.prepare_unique, self.extra) != \
                (existing.expire, existing.hidden, existing.prepare_unique, existing.extra):
            return "equivalent"
        return "identical"

    def set_unique(self, unique: bool, prepare_unique: bool) -> None:
        """``collMod`` ``index: {unique / prepareUnique / forceNonUnique}`` (coll_mod_index.cpp): the index's
        uniqueness, and whether writes refuse new duplicate keys while it is not unique yet."""
        self.unique = bool(unique)
        self.prepare_unique = bool(prepare_unique) and not self.unique
        self.checks_dups = self.unique or self.prepare_unique

    def is_unique(self) -> bool:
        """``unique: true``, or the ``_id`` key pattern (always unique, whatever the index is called)."""
        return self.unique or self.key == [("_id", 1)]


def _num(d: Any) -> Any:
    """A key pattern direction as BSON compares it (1 and 1.0 are one value)."""
    return float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else d


class Index:
    """A maintained index over one collection."""

    def __init__(self, spec: IndexSpec, keyfunc: KeyFunc | None = None) -> None:
        self.spec = spec
        self._one = len(spec.fields) == 1  # one-field keys: the entries keep the bare component (entrylist.py)
        self._entries = SortedEntries(one=self._one)
        self.keyfunc: KeyFunc = keyfunc or K.encode
        self.multikey = False
        self.multikey_paths: dict[str, set[str]] = {f: set() for f in spec.fields}
        self.accesses = 0
        import datetime
        self.since = datetime.datetime.utcnow()

    @property
    def entries(self) -> SortedEntries:
        """The index entries ``(key tuple, record id)`` in index order."""
        return self._entries

    @entries.setter
    def entries(self, items: "SortedEntries | list[tuple[tuple, int]]") -> None:
        """Replace the entries: a ``SortedEntries`` is taken as it is, a list must already be sorted."""
        self._entries = items if isinstance(items, SortedEntries) else SortedEntries(items, self._one)

    # -- key generation -------------------------------------------------------------------------
    def _fast_keys(self) -> Callable[[dict], list | None] | None:
        """A key function specialised for this index's top-level fields: the keys of a document without
        arrays on the indexed fields, or None (then ``keys_for`` takes the general path). Same keys as the
        general path, with fewer calls per document (one closure per index, specialised for one and two
        fields, recent string encodings remembered)."""
        spec = self.spec
        if not spec.simple:
            return None
        kf = self.keyfunc
        unique = spec.unique  # values do not repeat there: remembering them would only cost memory
        if kf is K.encode and not unique:
            kf = _cached_str_encoder()
        inv = K.invert
        missing = K.MISSING
        sparse = spec.sparse
        null = kf(None)
        if len(spec.fields) == 1:
            f = spec.fields[0]
            desc = spec.desc[0]
            null_key = [((inv(null) if desc else null),)]
            # a repeated string or integer value (an author id) shares one key tuple across its entries
            # instead of one 48-byte tuple per document (not for unique indexes: their values do not repeat)
            share = not unique
            by_type: dict = {str: {}, int: {}}  # plain strs and ints (1, True and 1.0 are equal dict keys)

            def one(doc: dict) -> list | None:
                v = doc.get(f, missing)
                if v is missing:
                    return [] if sparse else list(null_key)
                t = type(v)
                if t is list:
                    return None
                if share and (t is str or t is int):
                    tuples = by_type[t]
                    k = tuples.get(v)
                    if k is None:
                        if len(tuples) >= 65536:
                            tuples.clear()
                        e = kf(v)
                        k = tuples[v] = ((inv(e),) if desc else (e,))
                    return [k]
                e = null if v is None else kf(v)
                return [(inv(e),)] if desc else [(e,)]
            return one
        fields = spec.fields
        descs = spec.desc
        any_desc = spec.any_desc
        if len(fields) == 2:
            f1, f2 = fields
            d1, d2 = descs

            def two(doc: dict) -> list | None:
                v1 = doc.get(f1, missing)
                v2 = doc.get(f2, missing)
                if type(v1) is list or type(v2) is list:
                    return None
                if sparse and v1 is missing and v2 is missing:
                    return []
                e1 = null if (v1 is missing or v1 is None) else kf(v1)
                e2 = null if (v2 is missing or v2 is None) else kf(v2)
                return [((inv(e1) if d1 else e1), (inv(e2) if d2 else e2))]
            return two

        def many(doc: dict) -> list | None:
            vals = [doc.get(f, missing) for f in fields]
            enc = []
            for v in vals:
                if v is missing or v is None:
                    enc.append(null)
                elif type(v) is list:
                    return None
                else:
                    enc.append(kf(v))
            if sparse and all(v is missing for v in vals):
                return []
            if any_desc:
                return [tuple([inv(e) if d else e for e, d in zip(enc, descs)])]
            return [tuple(enc)]
        return many

    def _fast_fn(self) -> Callable[[dict], list | None]:
        """``_fast_keys()``, built on first use from the spec and the key function given at construction."""
        try:
            return self._fast
        except AttributeError:
            fast = self._fast = self._fast_keys() or _no_fast_keys
            return fast

    def flat_keys(self, doc: dict) -> list[tuple]:
        """``keys_for(doc)[0]`` for a document none of whose indexed values is an array (so no multikey
        paths to report), with fewer steps."""
        if self.spec.partial is None:
            keys = self._fast_fn()(doc)
            if keys is not None:
                return keys
        return self.keys_for(doc)[0]

    def keys_for(self, doc: dict) -> tuple[list[tuple], dict[str, set[str]]]:
        """Index keys of ``doc`` (empty list when sparse/partial excludes it). Raises ParallelArrays."""
        spec = self.spec
        if spec.partial is not None and not spec.partial_match(doc):
            return [], {}
        keys = self._fast_fn()(doc)
        if keys is not None:
            return keys, {}
        if spec.simple:
            vals = []
            for f in spec.fields:
                v = doc.get(f, K.MISSING)
                if type(v) is list:
                    break
                vals.append(v)
            else:
                kf = self.keyfunc
                if spec.sparse and all(v is K.MISSING for v in vals):
                    return [], {}
                if spec.any_desc:
                    return [tuple((K.invert(kf(None if v is K.MISSING else v)) if d else
                                   kf(None if v is K.MISSING else v)) for v, d in zip(vals, spec.desc))], {}
                return [tuple([kf(None if v is K.MISSING else v) for v in vals])], {}
        kv, arrays_pos = K.index_key_values(doc, spec.parts)
        kf = self.keyfunc
        missing = K.MISSING
        null_enc = kf(None)
        if not arrays_pos:
            vals = kv[0]
            if spec.sparse and all(v is missing for v in vals):
                return [], {}
            key = tuple((K.invert(e) if d else e) for e, d in
                        zip(((null_enc if v is missing else kf(v)) for v in vals), spec.desc))
            return [key], {}
        arrays = {spec.fields[p]: s for p, s in arrays_pos.items()}
        if len(arrays) > 1:
            self._check_parallel(arrays)
        if spec.sparse and all(v is missing for key in kv for v in key):
            return [], {}
        out = set()
        for vals in kv:
            out.add(tuple((K.invert(e) if d else e) for e, d in
                          zip(((null_enc if v is missing else kf(v)) for v in vals), spec.desc)))
        return sorted(out), arrays

    def key_document(self, doc: dict, key: tuple) -> dict:
        """The index key ``key`` (an entry of ``doc``) as the document find's ``returnKey`` gives: the key
        pattern's field names (a dotted name is one field) with the values ``doc`` has there, null for a missing
        field, in their stored BSON types (return_key.cpp: the key string's values with its type bits)."""
        spec = self.spec
        kv, _ = K.index_key_values(doc, spec.parts)
        kf = self.keyfunc
        missing = K.MISSING
        null_enc = kf(None)
        for vals in kv:
            enc = tuple((K.invert(e) if d else e) for e, d in
                        zip(((null_enc if v is missing else kf(v)) for v in vals), spec.desc))
            if enc == key:
                break
        else:
            vals = kv[0]
        return {f: (None if v is missing else v) for f, v in zip(spec.fields, vals)}

    def _check_parallel(self, arrays: dict[str, set[str]]) -> None:
        items = list(arrays.items())
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                fi, pi = items[i]
                fj, pj = items[j]
                for a in pi:
                    for b in pj:
                        if not (a == b or a.startswith(b + ".") or b.startswith(a + ".")):
                            raise K.ParallelArrays(b.split(".")[-1], a.split(".")[-1])

    # -- maintenance ------------------------------------------------------------------------------
    def note_arrays(self, arrays: dict[str, set[str]]) -> None:
        if arrays:
            self.multikey = True
            for f, ps in arrays.items():
                self.multikey_paths[f] |= ps

    def add(self, keys: list[tuple], rid: int) -> None:
        e = self._entries
        for k in keys:
            e.add((k, rid))

    def place(self, key: tuple, rid: int) -> tuple[Any, int | None]:
        """Where the entry ``(key, rid)`` belongs (an opaque location for ``insert_at``), and (unique and
        prepareUnique indexes) the record id of another entry with the same key, else None: one search serving both the unique check
        and the insertion (which ``insert_at`` does later, once every index has been checked)."""
        e = self._entries
        if not e or e.last()[0] < key:
            return e.end_loc(), None  # past the end (increasing _id values): one comparison, no search
        if self.spec.checks_dups:  # unique, or prepareUnique (new duplicates refused, old ones kept)
            loc = e.locate((key,))
            item = e.at(loc)
            if item is None or item[0] != key:
                return loc, None  # no entry with this key: (key, rid) goes exactly here
            for k, r in e.first_ge((key,)):
                if k != key:
                    break
                if r != rid:
                    return None, r
        return e.locate((key, rid)), None

    def insert_at(self, pos: Any, key: tuple, rid: int) -> None:
        """Insert the entry ``(key, rid)`` at ``pos`` as returned by ``place`` (nothing changed in between)."""
        self._entries.insert_at(pos, (key, rid))

    def sort_entries(self, items: list[tuple[tuple, int]]) -> None:
        """Sort ``(key, record id)`` entries in place (same order as ``items.sort()``)."""
        if self.keyfunc is K.encode and len(items) > 8:
            items.sort(key=_flat_entry)
        else:
            items.sort()

    def add_bulk(self, items: list[tuple[tuple, int]]) -> None:
        """Insert many entries: the batch is sorted, then appended past the end, inserted one by one (few) or
        merged in one linear pass (many)."""
        if not items:
            return
        if len(items) > 1:
            self.sort_entries(items)
        self._entries.update(items)

    def remove(self, keys: list[tuple], rid: int) -> None:
        e = self._entries
        for k in keys:
            e.remove((k, rid))

    def clear(self) -> None:
        self._entries = SortedEntries(one=self._one)
        self.multikey = False
        self.multikey_paths = {f: set() for f in self.spec.fields}

    # -- explain helpers --------------------------------------------------------------------------
    def multikey_paths_doc(self) -> dict[str, list[str]]:
        return {f: sorted(p) for f, p in self.multikey_paths.items()}

    def key_size_bytes(self) -> int:
        """Estimated size: encoded key bytes + 8-byte record id + 16 bytes per-entry overhead."""
        return sum(sum(len(x) for x in k) + 24 for k, _ in self.entries)
