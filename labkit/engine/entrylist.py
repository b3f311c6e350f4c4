"""A sorted sequence of index entries with O(log n)-ish insertion and deletion (a blocked sorted list).

The entries of an index used to live in one flat Python list kept sorted with ``bisect.insort``: each insertion
in the middle moved every later pointer (O(n) per document, so loading grew faster than linearly). Here the
entries live in blocks of at most ``2 * LOAD`` sorted items; ``maxes[b]`` is the last item of block ``b``. An
insertion or deletion binary-searches ``maxes``, then the block, and moves at most ``2 * LOAD`` pointers.

The sequence answers like the sorted list it replaces (the property test in
tests/test_engine_index_structure.py checks it against one): ``len``, positional ``[i]`` (negative indexes and
slices too), iteration, ``bisect_left`` / ``bisect_right`` with the same results as the ``bisect`` module on the
flat list, and ``add`` / ``remove`` / ``update`` keeping the order. Positions are global (0 .. len-1); the start
offset of every block is recomputed lazily (one C-level pass over the block lengths) after a change, and the block
of the last positional access is remembered so that scans walking positions one by one stay O(1) per step.
"""
from __future__ import annotations

from bisect import bisect_left as _bl, bisect_right as _br, insort as _insort
from itertools import accumulate, chain, islice
from typing import Any, Iterable, Iterator

LOAD = 512  # target block size; a block splits beyond 2 * LOAD items and merges below LOAD // 4


class SortedEntries:
    """Sorted items (``(key tuple, record id)`` index entries, or any totally ordered values) in blocks."""

    __slots__ = ("_lists", "_maxes", "_len", "_offsets", "_cs", "_ce", "_cblk")

    def __init__(self, items: Iterable[Any] = ()) -> None:
        """Build from items that are ALREADY SORTED (the caller sorted them; not checked)."""
        items = items if type(items) is list else list(items)
        self._lists: list[list] = [items[i:i + LOAD] for i in range(0, len(items), LOAD)]
        self._maxes: list = [blk[-1] for blk in self._lists]
        self._len = len(items)
        self._dirty()

    # -- internal bookkeeping -------------------------------------------------------------------
    def _dirty(self) -> None:
        self._offsets: list[int] | None = None
        self._cs = 0
        self._ce = 0  # empty cached range: the next positional access takes the slow path
        self._cblk: list = []

    def _offs(self) -> list[int]:
        offs = self._offsets
        if offs is None:
            offs = self._offsets = list(accumulate(map(len, self._lists), initial=0))
        return offs

    def _split(self, b: int) -> None:
        blk = self._lists[b]
        half = blk[LOAD:]
        del blk[LOAD:]
        self._lists.insert(b + 1, half)
        self._maxes[b] = blk[-1]
        self._maxes.insert(b + 1, half[-1])

    # -- sequence protocol ----------------------------------------------------------------------
    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __iter__(self) -> Iterator[Any]:
        return chain.from_iterable(self._lists)

    def __reversed__(self) -> Iterator[Any]:
        return chain.from_iterable(reversed(blk) for blk in reversed(self._lists))

    def __getitem__(self, i: Any) -> Any:
        cs = self._cs
        try:
            if cs <= i < self._ce:
                return self._cblk[i - cs]
        except TypeError:  # a slice
            pass
        return self._get(i)

    def _get(self, i: Any) -> Any:
        if type(i) is slice:
            start, stop, step = i.indices(self._len)
            if step != 1:
                return list(self)[i]
            return self.items_between(start, stop)
        n = self._len
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("index out of range")
        if i == n - 1:
            return self._lists[-1][-1]
        offs = self._offs()
        b = _br(offs, i) - 1
        blk = self._lists[b]
        self._cs = s = offs[b]
        self._ce = s + len(blk)
        self._cblk = blk
        return blk[i - s]

    def items_between(self, i: int, j: int) -> list:
        """The items at positions ``i`` .. ``j - 1`` (``flat[i:j]`` for 0 <= i, j <= len), block slices joined."""
        if j <= i:
            return []
        offs = self._offs()
        lists = self._lists
        b = _br(offs, i) - 1
        s = offs[b]
        blk = lists[b]
        if j <= s + len(blk):
            return blk[i - s:j - s]
        out = blk[i - s:]
        b += 1
        while True:
            s = offs[b]
            blk = lists[b]
            if j <= s + len(blk):
                out.extend(blk[:j - s])
                return out
            out.extend(blk)
            b += 1

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, SortedEntries):
            return self._len == other._len and list(self) == list(other)
        if isinstance(other, list):
            return self._len == len(other) and list(self) == other
        return NotImplemented

    def __repr__(self) -> str:
        return "SortedEntries(%r)" % (list(self),)

    def copy(self) -> "SortedEntries":
        """An independent copy (the items themselves are shared: they are immutable tuples)."""
        new = SortedEntries.__new__(SortedEntries)
        new._lists = [list(blk) for blk in self._lists]
        new._maxes = list(self._maxes)
        new._len = self._len
        new._dirty()
        return new

    # -- searching ------------------------------------------------------------------------------
    def bisect_left(self, x: Any, lo: int = 0) -> int:
        """``bisect.bisect_left`` of ``x`` in the flat sorted sequence (never before ``lo``)."""
        maxes = self._maxes
        b = _bl(maxes, x)
        if b == len(maxes):
            pos = self._len
        else:
            pos = self._offs()[b] + _bl(self._lists[b], x)
        return pos if pos >= lo else lo

    def head_from(self, x: Any, n: int) -> list:
        """The first ``n`` (or fewer, at the end) items not below ``x``: ``flat[bisect_left(x):][:n]``, without
        computing positions (the EXPRESS lookup of one document)."""
        maxes = self._maxes
        b = _bl(maxes, x)
        lists = self._lists
        if b == len(maxes):
            return []
        blk = lists[b]
        i = _bl(blk, x)
        out = blk[i:i + n]
        b += 1
        while len(out) < n and b < len(lists):
            out.extend(lists[b][:n - len(out)])
            b += 1
        return out

    def bisect_right(self, x: Any) -> int:
        """``bisect.bisect_right`` of ``x`` in the flat sorted sequence."""
        maxes = self._maxes
        b = _br(maxes, x)
        if b == len(maxes):
            return self._len
        return self._offs()[b] + _br(self._lists[b], x)

    def last(self) -> Any:
        """The greatest item (IndexError when empty)."""
        if not self._len:
            raise IndexError("empty")
        return self._maxes[-1]

    def locate(self, x: Any) -> tuple[int, int]:
        """Where ``x`` would be inserted, as an opaque location for ``insert_at`` (valid until the next change)."""
        maxes = self._maxes
        b = _bl(maxes, x)
        if b == len(maxes):
            return (b, 0)
        return (b, _bl(self._lists[b], x))

    def end_loc(self) -> tuple[int, int]:
        """The location past the greatest item (for ``insert_at`` of an item greater than all)."""
        return (len(self._lists), 0)

    def at(self, loc: tuple[int, int]) -> Any:
        """The item at a location from ``locate``, or None past the end."""
        b, i = loc
        lists = self._lists
        if b < len(lists):
            blk = lists[b]
            if i < len(blk):
                return blk[i]
        return None

    def first_ge(self, x: Any) -> Iterator[Any]:
        """The items ``>= x`` in order (an iterator; do not change the sequence while using it)."""
        maxes = self._maxes
        b = _bl(maxes, x)
        if b == len(maxes):
            return iter(())
        lists = self._lists
        blk = lists[b]
        i = _bl(blk, x)
        # lazy views (no copy of the block): a unique check usually reads one or two items
        return chain(islice(blk, i, None), chain.from_iterable(islice(lists, b + 1, None)))

    # -- changes --------------------------------------------------------------------------------
    def add(self, x: Any) -> None:
        """Insert ``x`` keeping the order (after any equal items)."""
        lists = self._lists
        maxes = self._maxes
        if not lists:
            lists.append([x])
            maxes.append(x)
        else:
            b = _br(maxes, x)
            if b == len(maxes):
                b -= 1
                lists[b].append(x)
                maxes[b] = x
            else:
                _insort(lists[b], x)
            if len(lists[b]) > 2 * LOAD:
                self._split(b)
        self._len += 1
        self._offsets = None  # = _dirty(), inlined on the insert path
        self._ce = 0

    def insert_at(self, loc: tuple[int, int], x: Any) -> None:
        """Insert ``x`` at a location returned by ``locate(x)`` (nothing changed in between)."""
        b, i = loc
        lists = self._lists
        if b == len(lists):
            if not lists:
                lists.append([x])
                self._maxes.append(x)
            else:
                b -= 1
                lists[b].append(x)
                self._maxes[b] = x
        else:
            lists[b].insert(i, x)
        if len(lists[b]) > 2 * LOAD:
            self._split(b)
        self._len += 1
        self._offsets = None  # = _dirty(), inlined on the insert path
        self._ce = 0

    def remove(self, x: Any) -> bool:
        """Remove one item equal to ``x``; False (nothing changed) when there is none."""
        maxes = self._maxes
        b = _bl(maxes, x)
        if b == len(maxes):
            return False
        blk = self._lists[b]
        i = _bl(blk, x)
        if i >= len(blk) or blk[i] != x:
            return False
        del blk[i]
        self._len -= 1
        if not blk:
            del self._lists[b]
            del maxes[b]
        else:
            maxes[b] = blk[-1]
            if len(blk) < LOAD // 4 and len(self._lists) > 1:
                self._merge(b)
        self._dirty()
        return True

    def _merge(self, b: int) -> None:
        """Join block ``b`` with a neighbour (then split again when too big)."""
        lists = self._lists
        if b == len(lists) - 1:
            b -= 1
        lists[b].extend(lists[b + 1])
        del lists[b + 1]
        del self._maxes[b + 1]
        self._maxes[b] = lists[b][-1]
        if len(lists[b]) > 2 * LOAD:
            self._split(b)

    def update(self, items: list) -> None:
        """Insert many items, given SORTED: appended in blocks past the end, inserted one by one when few,
        else merged with the existing items (one linear merge and a rebuild)."""
        if not items:
            return
        n = self._len
        if not n or self._maxes[-1] < items[0]:
            lists = self._lists
            start = 0
            if lists and len(lists[-1]) < LOAD:
                room = LOAD - len(lists[-1])
                lists[-1].extend(items[:room])
                self._maxes[-1] = lists[-1][-1]
                start = room
            for i in range(start, len(items), LOAD):
                blk = items[i:i + LOAD]
                lists.append(blk)
                self._maxes.append(blk[-1])
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
        self.__init__(merged)

    def clear(self) -> None:
        self._lists = []
        self._maxes = []
        self._len = 0
        self._dirty()
