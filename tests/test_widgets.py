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


# --- hostile input (issue 17 item 5) ---------------------------------------------------------------------

@pytest.mark.parametrize("value, words", [(10**9, "above the maximum"), (-1, "below the minimum")])
def test_set_out_of_range_is_refused_not_clamped(value, words):
    h = explorer(_doc_size, sliders={"roles": (0, 8, 2)})
    with pytest.raises(ValueError, match=rf"roles=.*slider 'roles' allows 0 to 8 \({words}\)"):
        h.set(roles=value)
    assert h.values == {"roles": 2} and h.result == _doc_size(2)


@pytest.mark.parametrize("value", ["5", 2.5, True, None])
def test_set_wrong_type_is_refused(value):
    h = explorer(_doc_size, sliders={"roles": (0, 8, 2)})
    with pytest.raises(ValueError, match="slider 'roles' takes an integer between 0 and 8"):
        h.set(roles=value)
    assert h.values == {"roles": 2}


def test_set_checks_every_value_before_moving_any():
    h = explorer(lambda a, b: {"sum": a + b}, sliders={"a": (0, 5, 1), "b": (0, 5, 1)})
    with pytest.raises(ValueError, match="'b'"):
        h.set(a=3, b=99)
    assert h.values == {"a": 1, "b": 1} and h.result == {"sum": 2}


def test_dropdown_value_must_be_an_option():
    h = explorer(lambda shape: {"shape": shape}, sliders={"shape": ["a_1", "b_1"]})
    with pytest.raises(ValueError, match=r"shape='c_1': not one of the dropdown 'shape''s options \['a_1', 'b_1'\]"):
        h.set(shape="c_1")


def test_compute_error_replaces_the_stale_result():
    def compute(n):
        if n > 5:
            raise ValueError("n too big for this model")
        return {"double": 2 * n}

    h = explorer(compute, sliders={"n": (0, 10, 2)})
    assert "4" in h.readout.value
    with pytest.raises(ValueError, match="too big"):
        h.set(n=7)
    assert h.values == {"n": 7}
    assert h.result == {}
    assert "n=7" in h.readout.value and "too big" in h.readout.value and ">4<" not in h.readout.value
    assert "double" not in h.text() and "error: could not compute for n=7" in h.text()
    h.set(n=3)
    assert h.result == {"double": 6} and "error" not in h.text() and "6" in h.readout.value


@pytest.mark.parametrize("step", [0, -1, 1.5])
def test_bad_step_is_refused_at_construction(step):
    import ipywidgets as w
    with pytest.raises(ValueError, match="step must be a positive integer"):
        explorer(_doc_size, sliders={"roles": (0, 8, 2, step)})
    with pytest.raises(ValueError, match="step must be a positive integer"):
        explorer(_doc_size, sliders={"roles": w.IntSlider(min=0, max=8, value=2, step=step if step != 1.5 else 0)})


def test_bad_spec_shape_is_refused():
    with pytest.raises(ValueError, match="give \\(min, max, value"):
        explorer(_doc_size, sliders={"roles": (0, 8)})
