"""Checks on the embedded engine's storage that several test modules share."""
from __future__ import annotations


def consistent(coll) -> None:
    """Every index of ``coll`` holds exactly the keys its documents give (an engine invariant: the server's
    indexes are updated in the same write as the documents)."""
    st = coll._store
    for ix in st.ix.values():
        expected = []
        for rid, d in st.docs.items():
            keys, _ = ix.keys_for(d)
            expected.extend((k, rid) for k in keys)
        assert sorted(expected) == ix.entries, ix.spec.name
