"""labkit.widgets: explorers are driven by their handle, without a browser."""
import bson
import pytest

from labkit.widgets import explorer


def _doc_size(roles):
    doc = {"_id": "user:112", "roles": [{"title": f"r{i}", "canEdit": i % 2 == 0} for i in range(roles)]}
    return {"roles": roles, "document bytes": len(bson.encode(doc))}


def test_slider_drives_readout_and_text():
    h = explorer(_doc_size, sliders={"roles": (0, 8, 2)}, title="Roles per user")
    assert h.result["document bytes"] == _doc_size(2)["document bytes"]
    h.sliders["roles"].value = 8
    expected = _doc_size(8)["document bytes"]
    assert h.result["document bytes"] == expected
    assert f"{expected:,}" in h.readout.value
    assert h.text().splitlines()[0] == "Roles per user: roles=8"
    assert repr(h) == h.text()


def test_set_and_plot():
    drawn = []
    h = explorer(_doc_size, sliders={"roles": (0, 8, 0)}, draw=lambda ax, v, r: drawn.append(v["roles"]) or ax.bar([0], [1]))
    h.set(roles=5)
    assert drawn[-1] == 5 and h.image.value[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="unknown slider"):
        h.set(users=3)


def test_mimebundle_text_is_summary():
    h = explorer(_doc_size, sliders={"roles": (0, 8, 1)})
    bundle = h._repr_mimebundle_()
    assert bundle["text/plain"] == h.text()
    assert "application/vnd.jupyter.widget-view+json" in bundle


@pytest.mark.parametrize("spec", [(5, 1, 3), (0, 10, 11)])
def test_bad_slider(spec):
    with pytest.raises(ValueError, match="slider"):
        explorer(_doc_size, sliders={"roles": spec})


def test_dropdown_control():
    h = explorer(lambda shape, n: {"shape": shape, "n": n}, sliders={"shape": ["a_1", "b_1"], "n": (1, 5, 2)})
    h.set(shape="b_1")
    assert h.result == {"shape": "b_1", "n": 2}
    assert h.text().splitlines()[0] == "shape=b_1, n=2"
