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


# --- caching and plot reuse (issue 19: every step under 250 ms) -------------------------------------------

def _counting(calls):
    def compute(n):
        calls.append(n)
        return {"square": n * n}
    return compute


def test_cache_answers_a_value_shown_before_without_computing():
    calls = []
    h = explorer(_counting(calls), sliders={"n": (0, 10, 2)}, cache=True,
                 draw=lambda ax, v, r: ax.bar(["n"], [r["square"]]))
    first_png = h.image.value
    h.set(n=7)
    h.set(n=2)
    assert calls == [2, 7] and h.hits == 1
    assert h.result == {"square": 4} and h.image.value == first_png and ">4<" in h.readout.value
    assert h.text().splitlines()[1] == "  square: 4"


def test_without_cache_every_update_computes():
    calls = []
    h = explorer(_counting(calls), sliders={"n": (0, 10, 2)})
    h.set(n=7)
    h.set(n=2)
    assert calls == [2, 7, 2] and h.hits == 0


def test_cache_is_emptied_when_the_data_change_outside_compute():
    from labkit.engine import EmbeddedClient

    db = EmbeddedClient()["widgets_cache"]
    db.items.insert_many([{"_id": i, "size": i} for i in range(10)])

    def count_at_least(size):
        return {"items": db.items.count_documents({"size": {"$gte": size}})}

    h = explorer(count_at_least, sliders={"size": (0, 20, 5)}, cache=True, data=db)
    assert h.result == {"items": 5}
    h.set(size=8)
    db.items.insert_one({"_id": 99, "size": 15})  # a learner's write: both cached values are stale now
    assert h.set(size=5) == {"items": 6} and h.hits == 0
    assert h.set(size=8) == {"items": 3}
    assert h.set(size=5) == {"items": 6} and h.hits == 1  # unchanged data: cached again
    db.items.drop()
    assert h.set(size=8) == {"items": 0}
    db.other.insert_one({"_id": 1})  # another collection of the same database counts as a change too
    h.set(size=5)
    assert h.hits == 1


def test_cache_on_one_collection_and_compute_own_writes_keep_it():
    from labkit.engine import EmbeddedClient

    db = EmbeddedClient()["widgets_cache_own"]

    def grow_to(n):  # compute resizes its own data, as the lessons' sliders do (labkit.resize)
        have = db.kids.count_documents({})
        if n > have:
            db.kids.insert_many([{"_id": i} for i in range(have, n)])
        elif n < have:
            db.kids.delete_many({"_id": {"$gte": n}})
        return {"kids": db.kids.count_documents({})}

    h = explorer(grow_to, sliders={"n": (0, 50, 10)}, cache=True, data=db.kids)
    h.set(n=40)
    assert h.set(n=10) == {"kids": 10} and h.hits == 1
    db.kids.insert_one({"_id": "extra"})  # outside compute: the cached 40 would hide it
    assert h.set(n=40) == {"kids": 41} and h.hits == 1


def test_data_that_cannot_be_versioned_is_never_cached():
    import mongomock

    from labkit.widgets import data_version

    plain = mongomock.MongoClient()["plain"]  # stands for a server: no engine store to version
    assert data_version(plain) is None and data_version(object()) is None
    calls = []
    h = explorer(_counting(calls), sliders={"n": (0, 10, 2)}, cache=True, data=[plain])
    h.set(n=3)
    h.set(n=2)
    assert calls == [2, 3, 2] and h.hits == 0


def test_compute_errors_are_not_cached_and_clear_cache_forgets():
    calls = []

    def compute(n):
        calls.append(n)
        if n == 9:
            raise ValueError("nine")
        return {"n": n}

    h = explorer(compute, sliders={"n": (0, 10, 2)}, cache=True)
    for _ in range(2):
        with pytest.raises(ValueError):
            h.set(n=9)
    assert calls == [2, 9, 9] and "error" in h.text()
    h.set(n=2)
    assert h.hits == 1 and "error" not in h.text()
    h.clear_cache()
    h.set(n=3)
    h.set(n=2)
    assert calls[-2:] == [3, 2]


def test_canvas_reuses_the_layout_and_matches_a_fresh_figure():
    from labkit.plots import PngCanvas, render_png

    def bars(widths, label="keys + documents examined"):
        def draw(ax):
            ax.barh(["aggregate on read", "computed"], widths)
            ax.set_xlabel(label)
        return draw

    canvas = PngCanvas()
    seq = [[7000, 5000], [7100, 5000], [7200, 5000], [120, 5000], [7000, 5000], [7000, 5], [900_000, 5]]
    for widths in seq:
        assert canvas.render(bars(widths)) == render_png(bars(widths)), widths
    assert 1 <= canvas.layouts < len(seq)  # some renders reused the margins
    before = canvas.layouts
    canvas.render(bars([7000, 5000], label="a much longer label that needs other margins than before"))
    assert canvas.layouts == before + 1


def test_set_of_several_controls_computes_once_for_all_new_values():
    seen = []

    def compute(a, b):
        seen.append((a, b))
        return {"sum": a + b}

    h = explorer(compute, sliders={"a": (0, 5, 1), "b": (0, 5, 1)})
    assert h.set(a=3, b=4) == {"sum": 7}
    assert seen == [(1, 1), (3, 4)]  # never the half-moved (3, 1)
    h.sliders["a"].value = 2  # a learner's slider still updates on its own
    assert seen[-1] == (2, 4) and h.result == {"sum": 6}


def test_measured_keeps_each_value_until_the_data_change_outside_it():
    from labkit.engine import EmbeddedClient
    from labkit.widgets import measured

    db = EmbeddedClient()["widgets_measured"]
    db.kids.insert_many([{"_id": i} for i in range(5)])
    seen = []

    def grow_and_count(n):  # writes its own data (as a lesson's account ladder does), then measures
        seen.append(n)
        db.kids.delete_many({"_id": {"$gte": n}})
        db.kids.insert_many([{"_id": i} for i in range(db.kids.count_documents({}), n)] or [{"_id": "tmp"}])
        db.kids.delete_one({"_id": "tmp"})
        return db.kids.count_documents({})

    figures = measured(grow_and_count, data=db)
    assert [figures(3), figures(8), figures(3), figures(8)] == [3, 8, 3, 8]
    assert seen == [3, 8] and figures.calls == 2  # its own writes do not forget what it measured
    db.kids.insert_one({"_id": "learner"})  # a change outside it: every kept value is stale
    assert figures(8) == 9 and seen == [3, 8, 8]
    figures.clear()
    figures(8)
    assert seen[-1] == 8 and figures.calls == 4


def test_measured_keeps_nothing_for_data_it_cannot_version_or_unhashable_arguments():
    import mongomock

    from labkit.widgets import measured

    plain = mongomock.MongoClient()["plain_measured"]  # stands for a server
    calls = []
    figures = measured(lambda n: calls.append(n) or n, data=[plain])
    figures(1)
    figures(1)
    assert calls == [1, 1]
    from labkit.engine import EmbeddedClient

    listed = measured(lambda xs: calls.append(xs) or len(xs), data=EmbeddedClient()["m2"])
    assert listed([1, 2]) == 2 and listed([1, 2]) == 2 and calls[-2:] == [[1, 2], [1, 2]]
    with pytest.raises(TypeError):
        measured("not a function", data=plain)


def test_measured_failure_keeps_nothing_half_done():
    from labkit.engine import EmbeddedClient
    from labkit.widgets import measured

    db = EmbeddedClient()["widgets_measured_fail"]
    calls = []

    def flaky(n):
        calls.append(n)
        db.t.insert_one({"n": n})
        if n == 2:
            raise ValueError("two")
        return n

    f = measured(flaky, data=db.t)
    f(1)
    with pytest.raises(ValueError):
        f(2)
    f(1)  # the failed call wrote: what was kept before it is no longer trusted
    assert calls == [1, 2, 1]


def test_canvas_png_is_what_savefig_writes():
    import io

    from labkit.plots import PngCanvas, bars_against_limit

    draws = [lambda ax: (ax.barh(["a", "bb"], [3, 70_000]), ax.set_xlabel("x")),
             lambda ax: bars_against_limit(ax, ["ids", "embedded"], [1e6, 2e7], title="size"),
             lambda ax: (ax.plot([1, 2, 3], [4, 1, 9], label="l"), ax.legend(), ax.set_title("t"))]
    canvas = PngCanvas()
    for draw in draws * 2:
        png = canvas.render(draw)
        buf = io.BytesIO()
        canvas.figure.savefig(buf, format="png", metadata={"Software": None})
        assert png == buf.getvalue() and png.startswith(b"\x89PNG")
