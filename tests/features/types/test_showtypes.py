"""pmapviz.types in a notebook: a function or a program's name, any mode, its view and data;
bad input one line."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

import pmapviz
from pmapviz.features.types import showtypes


def f(x, w):
    return jnp.tanh(x @ w).sum(axis=1)


X = jax.ShapeDtypeStruct((64, 32), jnp.float32)
W = jax.ShapeDtypeStruct((32, 16), jnp.float32)


def test_a_function_in_every_mode_with_its_data_and_html():
    view = pmapviz.types(
        f, X, W, mesh=(4, 2), in_specs=[P("data", None), P(None, "model")], mode="all"
    )
    data = view.to_dict()
    assert list(data["modes"]) == ["auto", "explicit", "manual"]
    explicit = data["modes"]["explicit"]
    assert [e["out_types"] for e in explicit["equations"]] == [
        ["f32[64@data,16@model]"],
        ["f32[64@data,16@model]"],
        ["f32[64@data]"],
    ]
    assert explicit["equations"][2]["collectives"][0]["kind"] == "all-reduce"
    assert data["modes"]["auto"]["equations"][0]["chosen"] == ["P('data', 'model')"]
    assert "Manual's out_specs, from the outputs' varying axes" in data["notes"][-1]
    assert "role='img'" in view._repr_html_() and "Explicit:" in str(view)
    assert view.source["explicit"].rows[0].eqn.primitive == "dot_general"


def test_arrays_and_their_own_shardings_give_the_mesh_and_specs():
    mesh = jax.make_mesh((8,), ("i",))
    x = jax.device_put(np.ones((16, 4), np.float32), jax.NamedSharding(mesh, P("i")))
    data = pmapviz.types(lambda a: a * 2, x).to_dict()
    assert data["mesh"] == {"shape": [8], "axis_names": ["i"]}
    assert data["modes"]["explicit"]["in_types"] == ["f32[16@i,4]"]


def test_a_program_pmapviz_knows_by_name():
    data = pmapviz.types("meshes", mode="manual").to_dict()
    assert data["modes"]["manual"]["equations"][-1]["collectives"][0]["kind"] == "all-gather"


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"mesh": "2x<b>"}, "is not a mesh shape"),
        ({"mesh": (4, 2), "axis_names": ("da<ta", "m")}, "is not a simple name"),
        ({"mesh": (4, 2), "in_specs": ["P('data'", None]}, r"write it like P\('data', None\)"),
        ({"mesh": (4, 2), "in_specs": [P("data"), P("nope")]}, "does not have"),
        ({"mesh": (3, 2)}, "does not divide"),
        ({"mesh": (16, 16)}, "needs 256 devices"),
        ({"mode": "nope"}, "is not a mode"),
        ({"mesh": (4, 2), "in_specs": [1, 2]}, "give a PartitionSpec"),
    ],
)
def test_bad_input_is_one_line(kwargs, words):
    kwargs.setdefault("in_specs", [P("data", None), P()])
    with pytest.raises(ValueError, match=words) as err:
        pmapviz.types(f, X, W, **kwargs)
    assert "\n" not in str(err.value)


def test_huge_shapes_and_wrong_calls_are_one_line():
    with pytest.raises(ValueError, match="more than 1,099,511,627,776 elements"):
        pmapviz.types(f, jax.ShapeDtypeStruct((10**30,), jnp.float32), W)
    with pytest.raises(ValueError, match="give no arguments"):
        pmapviz.types("seed", X)
    with pytest.raises(ValueError, match="give a Python function"):
        pmapviz.types(42)
    with pytest.raises(ValueError, match="f gets"):
        showtypes._abstract(tuple([X] * 300))
