"""labkit.sizes: the arithmetic matches bson.encode byte for byte."""
import bson
import pytest

from labkit.sizes import array_value_size, doc_size_with_array, max_elements

SAM = {"_id": "user:112", "name": "Sam", "email": "sam@example.com"}


@pytest.mark.parametrize("n", [0, 1, 9, 10, 11, 99, 100, 101, 1234, 10001])
@pytest.mark.parametrize("make", [
    lambda i: f"post:{i}",
    lambda i: {"_id": f"post:{i:07d}", "title": "favorite pizza", "location": "Los Angeles"},
    lambda i: i,
])
def test_exact(n, make):
    doc = dict(SAM, postIds=[make(i) for i in range(n)])
    assert doc_size_with_array(SAM, "postIds", n, make) == len(bson.encode(doc))


def test_max_elements_is_the_edge():
    make = lambda i: "x" * 1000  # noqa: E731
    n = max_elements(SAM, "blob", make, limit=100_000)
    assert len(bson.encode(dict(SAM, blob=[make(i) for i in range(n)]))) <= 100_000
    assert len(bson.encode(dict(SAM, blob=[make(i) for i in range(n + 1)]))) > 100_000


def test_bad_n():
    with pytest.raises(ValueError, match="n="):
        array_value_size(-1, str)
