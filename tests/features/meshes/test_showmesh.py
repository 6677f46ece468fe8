"""pmapviz.features.meshes.showmesh: the Meshes page's view in a notebook. Each device's block is
compared with
JAX's own NamedSharding, built here in the test."""

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from pmapviz.core.drawing import notebookviews
from pmapviz.core.planning.pmapplacement import index_text
from pmapviz.features.meshes import meshplacement, meshspecs, showmesh

EVIL = "<img src=x onerror=alert(1)>"


def _jax_index(mesh_shape, names, spec, shape):
    """coords -> (device id, the block's index as '[0:4, 0:16]'), from JAX."""
    mesh = jax.make_mesh(mesh_shape, names, devices=jax.devices()[: int(np.prod(mesh_shape))])
    where = NamedSharding(mesh, P(*spec)).devices_indices_map(shape)
    out = {}
    for coords in np.ndindex(*mesh_shape):
        dev = mesh.devices[coords]
        bounds = (slice(*s.indices(n)[:2]) for s, n in zip(where[dev], shape, strict=True))
        out[tuple(int(c) for c in coords)] = (dev.id, index_text(tuple(bounds)))
    return out


@pytest.mark.parametrize(
    "mesh_shape, names, spec, shape",
    [
        ((2, 4), ("data", "model"), ("data", None), (8, 16)),
        ((2, 4), ("data", "model"), (None, ("data", "model")), (3, 16)),
        ((1,), ("d",), ("d",), (8,)),
        ((3,), ("d",), ("d", None), (9, 2)),
        ((1, 3), ("a", "b"), (None, "b"), (2, 9)),
    ],
)
def test_each_devices_block_is_the_one_jax_gives_it(mesh_shape, names, spec, shape):
    view = showmesh.mesh(mesh_shape, names, {"x": (shape, spec)})
    truth = _jax_index(mesh_shape, names, spec, shape)
    rows = view.data["arrays"]["x"]["rows"]
    assert len(rows) == len(truth) == int(np.prod(mesh_shape))
    for row in rows:
        assert (row["device"], row["index"]) == truth[row["coords"]]
    assert view.data["problems"] == [] and not view.data["planned"]
    html = view.html()
    assert "role='img'" in html
    assert all(index in html for _, index in truth.values())


def test_the_words_say_what_each_device_holds_and_what_is_replicated():
    view = showmesh.mesh((2, 4), ("data", "model"), {"x": ((8, 16), ("data", None))})
    x = view.data["arrays"]["x"]
    placed = meshplacement.place(meshspecs.Mesh((2, 4), ("data", "model")), (8, 16), ("data",))
    assert x["local_shape"] == placed.local_shape and x["replicated_over"] == ("model",)
    assert x["spec"] == "P('data', None)"
    assert f"Each device holds {placed.local_shape}; replicated over model." in view.html()


def test_text_forms_of_every_argument_read_as_the_tuples():
    a = showmesh.mesh("2x4", "data, model", [("8, 16", "P('data', None)")])
    b = showmesh.mesh((2, 4), ("data", "model"), [((8, 16), P("data", None))])
    assert a.data == b.data
    assert list(a.data["arrays"]) == ["argument 1"]


def test_an_indivisible_spec_is_a_problem_box_with_its_fix():
    view = showmesh.mesh((2, 4), ("data", "model"), {"w": ((6, 16), ("model", None))})
    mesh = meshspecs.Mesh((2, 4), ("data", "model"))
    expected = meshspecs.problems(mesh, (6, 16), ("model", None), "w")
    (problem,) = view.data["problems"]
    assert problem["code"] == "indivisible" == expected[0].code
    html = view.html()
    assert "role='alert'" in html and "<b>Fix:</b>" in html
    assert notebookviews.escape(expected[0].message) in html
    assert notebookviews.escape(expected[0].fix) in html
    assert view.data["arrays"]["w"]["rows"] == []
    assert "problem:" in str(view) and "Fix:" in str(view)


def test_a_good_array_is_drawn_beside_one_with_a_problem():
    view = showmesh.mesh(
        (2, 4), ("data", "model"), {"ok": ((8,), ("data",)), "bad": ((8,), ("pipe",))}
    )
    assert [p["array"] for p in view.data["problems"]] == ["bad"]
    assert view.data["problems"][0]["code"] == "unknown_axis"
    assert len(view.data["arrays"]["ok"]["rows"]) == 8
    assert len(view.to_frame()) == 8


def test_a_mesh_bigger_than_this_process_is_planned_and_says_so():
    here = len(jax.devices())
    view = showmesh.mesh((4, 4), ("data", "model"), {"x": ((8, 8), ("data", "model"))})
    assert view.data["planned"] and view.data["devices"] == 16 > here
    assert len(view.data["rows"]) == 16
    assert "planned from shapes" in view.html() and "planned from shapes" in str(view)


def test_an_array_name_with_markup_is_escaped():
    view = showmesh.mesh((2, 4), ("data", "model"), {EVIL: ((8, 4), ("data",))})
    html = view.html()
    assert "<img" not in html and "&lt;img" in html
    bad = showmesh.mesh((2, 4), ("data", "model"), {EVIL: ((7, 4), ("data",))})
    assert "<img" not in bad.html() and "role='alert'" in bad.html()


def test_axis_names_with_markup_are_refused_by_the_parser():
    with pytest.raises(ValueError, match="not a simple name"):
        showmesh.mesh((2,), ("<b>",), {"x": ((8,), None)})


def test_the_text_form_lists_every_device():
    view = showmesh.mesh((2, 4), ("data", "model"), {"x": ((8, 16), ("data", None))})
    text = str(view)
    truth = _jax_index((2, 4), ("data", "model"), ("data", None), (8, 16))
    for (d, m), (dev, index) in truth.items():
        (line,) = [ln for ln in text.splitlines() if ln.split()[:2] == ["device", str(dev)]]
        assert f"data={d}, model={m}" in line and line.endswith(index)


@pytest.mark.parametrize(
    "args, match",
    [
        (("2x0", "a, b", [((8,), None)]), "at least 1 device"),
        (((2, 4), "a", [((8,), None)]), "names 1 axes"),
        (((2, 4), "a, b", {}), "arrays is empty"),
        (((2, 4), "a, b", "x"), "give a dict"),
        (((2, 4), "a, b", [((8,), "P(('a'")]), "write it like"),
        (((2, 4), "a, b", [((8,), (1,))]), "not an entry of a PartitionSpec"),
        (((2, 4), "a, b", [((-8,), None)]), "is not a size"),
        (((2, 4), "a, b", [(8,)]), "should be a \\(shape, spec\\) pair"),
    ],
)
def test_input_that_cannot_be_read_raises_the_parsers_message(args, match):
    with pytest.raises(ValueError, match=match):
        showmesh.mesh(*args)


def test_readys_notes_are_shown(monkeypatch):
    monkeypatch.setattr(notebookviews, "ready", lambda: ("Restart the kernel to change it.",))
    view = showmesh.mesh((2,), ("d",), {"x": ((4,), ("d",))})
    assert "Restart the kernel" in view.html()
    assert view.data["notes"] == ["Restart the kernel to change it."]


def test_axis_types_give_each_arrays_type_as_jax_typeof_prints_it():
    from jax.sharding import AxisType

    view = showmesh.mesh(
        (2, 4),
        ("data", "model"),
        {"x": ((8, 16), ("data", "model")), "bad": ((6,), ("model",))},
        axis_types=(AxisType.Auto, AxisType.Explicit),
    )
    m = jax.make_mesh(
        (2, 4),
        ("data", "model"),
        devices=jax.devices()[:8],
        axis_types=(AxisType.Auto, AxisType.Explicit),
    )
    x = jax.device_put(np.zeros((8, 16), np.float32), NamedSharding(m, P("data", "model")))
    x_data = view.data["arrays"]["x"]
    assert x_data["type"] == str(jax.typeof(x)) == "float32[8,16@model]"
    assert x_data["per_device_type"] == "float32[4,4]{V:(data,model)}"
    assert view.data["arrays"]["bad"]["problems"] and "type" not in view.data["arrays"]["bad"]
    assert view.data["axis_types"]["mesh"] == ("auto", "explicit")
    assert "jax.typeof: float32[8,16@model]" in view.text and "float32[8,16@model]" in view.html()
    with pytest.raises(ValueError, match="is not an axis type"):
        showmesh.mesh((2, 4), ("data", "model"), {"x": ((8,), None)}, axis_types=f"auto, {EVIL}")
    assert EVIL not in showmesh.mesh((8,), "d", {"x": ((8,), "d")}, axis_types="manual").html()
