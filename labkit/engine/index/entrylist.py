"""A sorted sequence of index entries with O(log n)-ish insertion and deletion (a blocked sorted list).

The entries of an index used to live in one flat Python list kept sorted with ``bisect.insort``: each insertion
in the middle moved every later pointer (O(n) per document, so loading grew faster than linearly). Here the
entries live in blocks of at most ``2 * LOAD`` sorted items; ``maxes[b]`` is the last item of block ``b``. An
insertion or deletion binary-searches ``maxes``, then the block, and moves at most ``2 * LOAD`` pointers.

An entry is a pair ``(key tuple, record id)``. A block does not keep one 56-byte pair tuple per entry: it keeps
two parallel lists, the key tuples and the record ids (two pointers per entry; the key tuples are often shared
between entries and the record id is the same int object as the record store's). The pair is built when an
entry is read (positional access, iteration, slices); ``key_at`` / ``rid_at`` / ``rids_between`` read one
column without building it. The entries of a one-field index (``one=True``) keep the key's only component in
the key column instead of a 1-tuple per entry (48 bytes less per entry where key tuples are not shared, as in
every ``_id`` index). A search for ``x`` (a pair, or a 1-tuple ``(key,)`` which sorts before every pair
of that key) binary-searches the key column, then, among the entries with ``x``'s key, the record id column
(record ids are sorted within one key, as the pairs' order has them).

The sequence answers like the sorted list of pairs it replaces (the property test in
tests/test_engine_index_structure.py checks it against one): ``len``, positional ``[i]`` (negative indexes and
slices too), iteration, ``bisect_left`` / ``bisect_right`` with the same results as the ``bisect`` module on the
flat list, and ``add`` / ``remove`` / ``update`` keeping the order. Positions are global (0 .. len-1); the start
offset of every block is recomputed lazily (one C-level pass over the block lengths) after a change, and the block
of the last positional access is remembered so that scans walking positions one by one stay O(1) per step.
"""
from __future__ import annotations

from bisect import bisect_left as _bl, bisect_right as _br
from itertools import accumulate, chain, islice
from typing import Any, Iterable, Iterator

LOAD = 512  # target block size; a block splits beyond 2 * LOAD items and merges below LOAD // 4


def _left(kb: list, rb: list, x: tuple, lo: int = 0) -> int:
    """``bisect_left`` of ``x`` among the pairs ``zip(kb, rb)`` of one block (from ``lo``)."""
    return _tie(kb, rb, x, x[0], lo, _bl)


def _right(kb: list, rb: list, x: tuple) -> int:
    """``bisect_right`` of ``x`` among the pairs ``zip(kb, rb)`` of one block."""
    return _tie(kb, rb, x, x[0], 0, _br)


def _tie(kb: list, rb: list, x: tuple, k: Any, lo: int, search: Any) -> int:
    """The first position of key ``k`` (from ``lo``), moved by ``search`` (``_bl``/``_br``) among the record
    ids of that key's entries when the probe ``x`` has one (``x[1]``)."""
    i = _bl(kb, k, lo)
    if len(x) > 1 and i < len(kb) and kb[i] == k:
        i = search(rb, x[1], i, _br(kb, k, i))
    return i


# One-field indexes keep the key's only component in the key column (a bare bytes string), not a 1-tuple per
# entry: ``(k,)`` compares with a probe ``p`` (a tuple) like ``k`` with ``p[0]`` when ``len(p) == 1``; a longer
# probe (``(lo, HIGH)``) is above ``(k,)`` exactly when ``p[0] >= k``; the empty probe is below every key.

def _left1(kb: list, rb: list, x: tuple, lo: int = 0) -> int:
    """``_left`` for a column of bare one-field keys."""
    p = x[0]
    if len(p) != 1:
        return _br(kb, p[0], lo) if p else lo
    return _tie(kb, rb, x, p[0], lo, _bl)


def _right1(kb: list, rb: list, x: tuple) -> int:
    """``_right`` for a column of bare one-field keys."""
    p = x[0]
    if len(p) != 1:
        return _br(kb, p[0]) if p else 0
    return _tie(kb, rb, x, p[0], 0, _br)


class SortedEntries:
    """Sorted ``(key tuple, record id)`` index entries in blocks of two parallel columns.

    ``one=True`` (the entries of a one-field index: every key tuple has exactly one component): the key column
    holds that component itself instead of a 1-tuple per entry; reads give the same pairs."""

    __slots__ = ("_keys", "_rids", "_maxes", "_len", "_offsets", "_cs", "_ce", "_ckb", "_crb", "_one",
                 "_lf", "_rf")

    def __init__(self, items: Iterable[tuple] = (), one: bool = False) -> None:
        """Build from pairs that are ALREADY SORTED (the caller sorted them; not checked)."""
        items = items if type(items) is list else list(items)
        self._mode(one)
        self._keys: list[list] = []
        self._rids: list[list] = []
        self._maxes: list[tuple] = []
        for i in range(0, len(items), LOAD):
            chunk = items[i:i + LOAD]
            self._keys.append([k for (k,), _ in chunk] if one else [k for k, _ in chunk])
            self._rids.append([r for _, r in chunk])
            self._maxes.append(chunk[-1])
        self._len = len(items)
        self._dirty()

    def _mode(self, one: bool) -> None:
        self._one = one
        self._lf = _left1 if one else _left
        self._rf = _right1 if one else _right

    @classmethod
    def from_columns(cls, keys: list, rids: list, one: bool = False) -> "SortedEntries":
        """Build from the key tuples and record ids of pairs ALREADY SORTED (no pair tuples built)."""
        new = cls.__new__(cls)
        new._mode(one)
        kcol = [k for (k,) in keys] if one else keys
        new._keys = [kcol[i:i + LOAD] for i in range(0, len(kcol), LOAD)]
        new._rids = [rids[i:i + LOAD] for i in range(0, len(rids), LOAD)]
        new._maxes = [new._pair(kb[-1], rb[-1]) for kb, rb in zip(new._keys, new._rids)]
        new._len = len(keys)
        new._dirty()
        return new

    @property
    def one_field(self) -> bool:
        """True when the key column holds bare one-field keys."""
        return self._one

    def _pair(self, k: Any, r: int) -> tuple:
        return ((k,), r) if self._one else (k, r)

    def _keycol(self, it: Iterable[Any]) -> Iterator[tuple]:
        """Key tuples from key column values."""
        return zip(it) if self._one else iter(it)

    # -- internal bookkeeping -------------------------------------------------------------------
    def _dirty(self) -> None:
        self._offsets: list[int] | None = None
        self._cs = 0
        self._ce = 0  # empty cached range: the next positional access takes the slow path
        self._ckb: list = []
        self._crb: list = []

    def _offs(self) -> list[int]:
        offs = self._offsets
        if offs is None:
            offs = self._offsets = list(accumulate(map(len, self._keys), initial=0))
        return offs

    def _split(self, b: int) -> None:
        kb = self._keys[b]
        rb = self._rids[b]
        khalf = kb[LOAD:]
        rhalf = rb[LOAD:]
        del kb[LOAD:]
        del rb[LOAD:]
        self._keys.insert(b + 1, khalf)
        self._rids.insert(b + 1, rhalf)
        self._maxes[b] = self._pair(kb[-1], rb[-1])
        self._maxes.insert(b + 1, self._pair(khalf[-1], rhalf[-1]))

    def _block(self, i: int) -> int:
        """Cache the block holding position ``i`` (0 <= i < len) for positional reads; return its start."""
        offs = self._offs()
        b = _br(offs, i) - 1
        kb = self._ckb = self._keys[b]
        self._crb = self._rids[b]
        self._cs = s = offs[b]
        self._ce = s + len(kb)
        return s

    def _norm(self, i: int) -> int:
        n = self._len
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("index out of range")
        return i

    # -- sequence protocol ----------------------------------------------------------------------
    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __iter__(self) -> Iterator[tuple]:
        return zip(self._keycol(chain.from_iterable(self._keys)), chain.from_iterable(self._rids))

    def __reversed__(self) -> Iterator[tuple]:
        return zip(self._keycol(chain.from_iterable(reversed(kb) for kb in reversed(self._keys))),
                   chain.from_iterable(reversed(rb) for rb in reversed(self._rids)))

    def __getitem__(self, i: Any) -> Any:
        cs = self._cs
        try:
            if cs <= i < self._ce:
                i -= cs
                if self._one:
                    return ((self._ckb[i],), self._crb[i])
                return (self._ckb[i], self._crb[i])
        except TypeError:  # a slice
            pass
        return self._get(i)

    def _get(self, i: Any) -> Any:
        if type(i) is slice:
            start, stop, step = i.indices(self._len)
            if step != 1:
                return list(self)[i]
            return self.items_between(start, stop)
        i = self._norm(i)
        i -= self._block(i)
        return self._pair(self._ckb[i], self._crb[i])

    def key_at(self, i: int) -> tuple:
        """The key tuple of the entry at position ``i`` (``self[i][0]`` without building the pair)."""
        cs = self._cs
        if not cs <= i < self._ce:
            i = self._norm(i)
            cs = self._block(i)
        k = self._ckb[i - cs]
        return (k,) if self._one else k

    def rid_at(self, i: int) -> int:
        """The record id of the entry at position ``i`` (``self[i][1]`` without building the pair)."""
        cs = self._cs
        if cs <= i < self._ce:
            return self._crb[i - cs]
        i = self._norm(i)
        s = self._block(i)
        return self._crb[i - s]

    def _columns_between(self, cols: list, i: int, j: int) -> list:
        offs = self._offs()
        b = _br(offs, i) - 1
        s = offs[b]
        blk = cols[b]
        if j <= s + len(blk):
            return blk[i - s:j - s]
        out = blk[i - s:]
        b += 1
        while True:
            s = offs[b]
            blk = cols[b]
            if j <= s + len(blk):
                out.extend(blk[:j - s])
                return out
            out.extend(blk)
            b += 1

    def items_between(self, i: int, j: int) -> list:
        """The pairs at positions ``i`` .. ``j - 1`` (``flat[i:j]`` for 0 <= i, j <= len)."""
        if j <= i:
            return []
        return list(zip(self._keycol(self._columns_between(self._keys, i, j)),
                        self._columns_between(self._rids, i, j)))

    def rids_between(self, i: int, j: int) -> list:
        """The record ids of the entries at positions ``i`` .. ``j - 1`` (0 <= i, j <= len)."""
        if j <= i:
            return []
        return self._columns_between(self._rids, i, j)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, SortedEntries):
            return self._len == other._len and list(self) == list(other)
        if isinstance(other, list):
            return self._len == len(other) and list(self) == other
        return NotImplemented

    def __repr__(self) -> str:
        return "SortedEntries(%r)" % (list(self),)

    def copy(self) -> "SortedEntries":
        """An independent copy (the keys and record ids themselves are shared: they are immutable)."""
        new = SortedEntries.__new__(SortedEntries)
        new._mode(self._one)
        new._keys = [list(kb) for kb in self._keys]
        new._rids = [list(rb) for rb in self._rids]
        new._maxes = list(self._maxes)
        new._len = self._len
        new._dirty()
        return new

    # -- searching ------------------------------------------------------------------------------
    def bisect_left(self, x: tuple, lo: int = 0) -> int:
        """``bisect.bisect_left`` of ``x`` in the flat sorted sequence (never before ``lo``)."""
        maxes = self._maxes
        b = _bl(maxes, x)
        if b == len(maxes):
            pos = self._len
        else:
            pos = self._offs()[b] + self._lf(self._keys[b], self._rids[b], x)
        return pos if pos >= lo else lo

    def head_from(self, x: tuple, n: int) -> Iterator[tuple]:
        """The first ``n`` (or fewer, at the end) pairs not below ``x``: ``flat[bisect_left(x):][:n]``, without
        computing positions (the EXPRESS lookup of one document). An iterator building each pair when it is
        read (the lookup usually reads one); do not change the sequence while using it."""
        found = self._find(x)
        if found is None:
            return iter(())
        b, i = found
        keys = self._keys
        rids = self._rids
        kb = keys[b]
        rb = rids[b]
        one = self._one
        ks: Any = kb[i:i + n]  # slices of at most n pointers; the pairs are built by zip as they are read
        rs: Any = rb[i:i + n]
        if len(ks) < n and b + 1 < len(keys):
            m = n - len(ks)
            ks = chain(ks, islice(chain.from_iterable(islice(keys, b + 1, None)), m))
            rs = chain(rs, islice(chain.from_iterable(islice(rids, b + 1, None)), m))
        return zip(zip(ks), rs) if one else zip(ks, rs)

    def _find(self, x: tuple) -> tuple[int, int] | None:
        """The block holding the first pair not below ``x`` and that pair's index in the block; None when
        every pair is below ``x``."""
        maxes = self._maxes
        b = _bl(maxes, x)
        if b == len(maxes):
            return None
        return b, self._lf(self._keys[b], self._rids[b], x)

    def bisect_right(self, x: tuple) -> int:
        """``bisect.bisect_right`` of ``x`` in the flat sorted sequence."""
        maxes = self._maxes
        b = _br(maxes, x)
        if b == len(maxes):
            return self._len
        return self._offs()[b] + self._rf(self._keys[b], self._rids[b], x)

    def last(self) -> tuple:
        """The greatest pair (IndexError when empty)."""
        if not self._len:
            raise IndexError("empty")
        return self._maxes[-1]

    def locate(self, x: tuple) -> tuple[int, int]:
        """Where ``x`` would be inserted, as an opaque location for ``insert_at`` (valid until the next change)."""
        maxes = self._maxes
        b = _bl(maxes, x)
        if b == len(maxes):
            return (b, 0)
        kb = self._keys[b]
        if self._one:
            return (b, _left1(kb, self._rids[b], x))
        k = x[0]  # _left, inlined on the insert path
        i = _bl(kb, k)
        if len(x) > 1 and i < len(kb) and kb[i] == k:
            i = _bl(self._rids[b], x[1], i, _br(kb, k, i))
        return (b, i)

    def end_loc(self) -> tuple[int, int]:
        """The location past the greatest pair (for ``insert_at`` of a pair greater than all)."""
        return (len(self._keys), 0)

    def at(self, loc: tuple[int, int]) -> tuple | None:
        """The pair at a location from ``locate``, or None past the end."""
        b, i = loc
        keys = self._keys
        if b < len(keys):
            kb = keys[b]
            if i < len(kb):
                return ((kb[i],), self._rids[b][i]) if self._one else (kb[i], self._rids[b][i])
        return None

    def first_ge(self, x: tuple) -> Iterator[tuple]:
        """The pairs ``>= x`` in order (an iterator; do not change the sequence while using it)."""
        found = self._find(x)
        if found is None:
            return iter(())
        b, i = found
        keys, rids = self._keys, self._rids
        # lazy views (no copy of the block): a unique check usually reads one or two pairs
        return zip(self._keycol(chain(islice(keys[b], i, None), chain.from_iterable(islice(keys, b + 1, None)))),
                   chain(islice(rids[b], i, None), chain.from_iterable(islice(rids, b + 1, None))))

    # -- changes --------------------------------------------------------------------------------
    def add(self, x: tuple) -> None:
        """Insert the pair ``x`` keeping the order (after any equal pairs)."""
        keys = self._keys
        maxes = self._maxes
        k, r = x
        if self._one:
            (k,) = k
        if not keys:
            keys.append([k])
            self._rids.append([r])
            maxes.append(x)
            b = 0
        else:
            b = _br(maxes, x)
            if b == len(maxes):
                b -= 1
                keys[b].append(k)
                self._rids[b].append(r)
                maxes[b] = x
            else:
                kb = keys[b]
                rb = self._rids[b]
                i = self._rf(kb, rb, x)
                kb.insert(i, k)
                rb.insert(i, r)
        if len(keys[b]) > 2 * LOAD:
            self._split(b)
        self._len += 1
        self._offsets = None  # = _dirty(), inlined on the insert path
        self._ce = 0

    def insert_at(self, loc: tuple[int, int], x: tuple) -> None:
        """Insert the pair ``x`` at a location returned by ``locate(x)`` (nothing changed in between)."""
        b, i = loc
        keys = self._keys
        k, r = x
        if self._one:
            (k,) = k
        if b == len(keys):
            if not keys:
                keys.append([k])
                self._rids.append([r])
                self._maxes.append(x)
                b = 0
            else:
                b -= 1
                keys[b].append(k)
                self._rids[b].append(r)
                self._maxes[b] = x
        else:
            keys[b].insert(i, k)
            self._rids[b].insert(i, r)
        if len(keys[b]) > 2 * LOAD:
            self._split(b)
        self._len += 1
        self._offsets = None  # = _dirty(), inlined on the insert path
        self._ce = 0

    def remove(self, x: tuple) -> bool:
        """Remove one pair equal to ``x``; False (nothing changed) when there is none."""
        found = self._find(x)
        if found is None:
            return False
        b, i = found
        maxes = self._maxes
        kb = self._keys[b]
        rb = self._rids[b]
        if i >= len(kb) or rb[i] != x[1] or ((kb[i],) if self._one else kb[i]) != x[0]:
            return False
        del kb[i]
        del rb[i]
        self._len -= 1
        if not kb:
            del self._keys[b]
            del self._rids[b]
            del maxes[b]
        else:
            maxes[b] = self._pair(kb[-1], rb[-1])
            if len(kb) < LOAD // 4 and len(self._keys) > 1:
                self._merge(b)
        self._dirty()
        return True

    def _merge(self, b: int) -> None:
        """Join block ``b`` with a neighbour (then split again when too big)."""
        keys = self._keys
        rids = self._rids
        if b == len(keys) - 1:
            b -= 1
        keys[b].extend(keys[b + 1])
        rids[b].extend(rids[b + 1])
        del keys[b + 1]
        del rids[b + 1]
        del self._maxes[b + 1]
        self._maxes[b] = self._pair(keys[b][-1], rids[b][-1])
        if len(keys[b]) > 2 * LOAD:
            self._split(b)

    def update(self, items: list) -> None:
        """Insert many pairs, given SORTED: appended in blocks past the end, inserted one by one when few,
        else merged with the existing pairs (one linear merge and a rebuild)."""
        if not items:
            return
        n = self._len
        if not n or self._maxes[-1] < items[0]:
            one = self._one
            keys = self._keys
            rids = self._rids
            start = 0
            if keys and len(keys[-1]) < LOAD:
                room = LOAD - len(keys[-1])
                head = items[:room]
                keys[-1].extend([k for (k,), _ in head] if one else [k for k, _ in head])
                rids[-1].extend([r for _, r in head])
                self._maxes[-1] = head[-1]
                start = room
            for i in range(start, len(items), LOAD):
                chunk = items[i:i + LOAD]
                keys.append([k for (k,), _ in chunk] if one else [k for k, _ in chunk])
                rids.append([r for _, r in chunk])
                self._maxes.append(chunk[-1])
            self._len += len(items)
            self._dirty()
            return
        if len(items) * 8 < n:
            for x in items:
                self.add(x)
            return
        merged = list(self)
        merged.extend(items)
        merged.sort()  # two sorted runs: timsort merges them in linear time
        self.__init__(merged, self._one)

    def clear(self) -> None:
        self._keys = []
        self._rids = []
        self._maxes = []
        self._len = 0
        self._dirty()
