"""Exact BSON size arithmetic for documents with large arrays, without building them.

Introduced in ``notebooks/02_one_to_many.ipynb``: a slider can ask "how big is Sam's document with 400,000 post
ids?" and get the exact byte count ``bson.encode`` would give, in microseconds.

BSON layout used: a document is ``int32 length + elements + 0x00``; an element is ``type byte + key cstring +
value``; an array is a document whose keys are "0", "1", ...
"""
from __future__ import annotations

from typing import Any, Callable

import bson

MAX_BSON_SIZE = 16 * 1024 * 1024


def element_size(key: str, value: Any) -> int:
    """Bytes one ``key: value`` element takes inside a document."""
    return len(bson.encode({key: value})) - 5  # minus the enclosing document's length prefix and terminator


def array_value_size(n: int, make: Callable[[int], Any]) -> int:
    """Bytes of an array value holding ``make(0) ... make(n-1)``, computed exactly.

    ``make(i)`` must return elements whose encoded size depends only on the number of digits of ``i`` (true for
    ids like ``f"post:{i}"`` padded or not, and for fixed-shape subdocuments); one sample per digit length is
    encoded, so the cost is O(number of digit lengths), not O(n).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n={n!r}: the number of array elements must be an int >= 0")
    total = 5  # int32 length + terminator
    lo = 0
    digits = 1
    while lo < n:
        hi = min(n, 10 ** digits)
        count = hi - lo
        sample = make(lo)
        total += count * (1 + digits + 1 + element_size("x", sample) - 3)  # type + key cstring + value
        lo = hi
        digits += 1
    return total


def doc_size_with_array(doc: dict, field: str, n: int, make: Callable[[int], Any]) -> int:
    """Exact ``len(bson.encode(doc))`` after ``doc[field]`` becomes ``[make(0), ..., make(n-1)]``."""
    base = dict(doc)
    base[field] = []
    return len(bson.encode(base)) - 5 + array_value_size(n, make)


def max_elements(doc: dict, field: str, make: Callable[[int], Any], limit: int = MAX_BSON_SIZE) -> int:
    """The largest array length for which the document still fits in ``limit`` bytes (binary search)."""
    lo, hi = 0, 1
    while doc_size_with_array(doc, field, hi, make) <= limit:
        hi *= 2
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if doc_size_with_array(doc, field, mid, make) <= limit:
            lo = mid
        else:
            hi = mid
    return lo
