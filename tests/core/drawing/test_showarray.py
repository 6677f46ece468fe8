"""pmapviz.core.drawing.showarray: a real jax.Array drawn as its sharding really is. Every
expectation is
read back from JAX (devices_indices_map, addressable_shards), never written by hand."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.drawing import showarray
from pmapviz.core.planning.pmapplacement import index_text
from tests.conftest import ROOT

EVIL = "<img src=x onerror=alert(1)>"


def _mesh(order=slice(None)):
    return Mesh(np.array(jax.devices()[:8])[order].reshape(2, 4), ("data", "model"))


def _put(shape, spec, mesh=None):
    x = jnp.arange(int(np.prod(shape)), dtype=jnp.float32).reshape(shape)
    return jax.device_put(x, NamedSharding(mesh or _mesh(), spec))


def _assert_rows_are_jax(view, x):
    """Each row's index is devices_indices_map's for that device, its shape the shard's."""
    where = x.sharding.devices_indices_map(x.shape)
    shards = {s.device.id: s for s in x.addressable_shards}
    by_id = {r["id"]: r for r in view.data["rows"]}
    assert sorted(by_id) == sorted(shards)
    for dev, index in where.items():
        row = by_id[dev.id]
        assert row["device"] == str(dev)
        assert row["index"] == index_text(index)
        assert row["shape"] == shards[dev.id].data.shape


def test_a_3d_array_on_a_2x4_mesh_shows_each_devices_block_as_jax_places_it():
    x = _put((4, 8, 16), P(None, "data", "model"))
    view = showarray.show(x)
    _assert_rows_are_jax(view, x)
    html = view._repr_html_()
    assert "role='img'" in html and "aria-label=" in html
    for index in x.sharding.devices_indices_map(x.shape).values():
        assert index_text(index) in html
    assert view.title == f"x: (4, 8, 16) {x.dtype}"
    assert view.data["mesh"] == {"data": 2, "model": 4}
    assert view.data["sharding"] == str(x.sharding)
    assert "P(None, 'data', 'model')" in view.data["summary"]
    assert "every device holds a different block" in view.data["summary"]


def test_rows_follow_the_mesh_order_even_when_it_is_not_the_id_order():
    mesh = _mesh(slice(None, None, -1))
    x = _put((8, 4), P("data", "model"), mesh)
    view = showarray.show(x)
    _assert_rows_are_jax(view, x)
    assert [r["id"] for r in view.data["rows"]] == [d.id for d in mesh.devices.flat]


def test_a_replicated_axis_is_named_in_the_words():
    x = _put((4, 8), P("data"))
    words = showarray.show(x).data["summary"]
    assert "replicated over model" in words
    local = x.addressable_shards[0].data.shape
    assert f"each device holds shape {local}" in words


def test_a_scalar_on_the_mesh_is_replicated_over_every_axis():
    x = jax.device_put(jnp.float32(3), NamedSharding(_mesh(), P()))
    view = showarray.show(x, "s")
    _assert_rows_are_jax(view, x)
    assert "replicated over data, model" in view.data["summary"]
    assert view.data["rows"][0]["index"] == "[]" and view.data["rows"][0]["shape"] == ()


def test_a_pmap_output_shows_one_block_per_device():
    y = jax.pmap(lambda v: v * 2)(jnp.ones((8, 3)))
    view = showarray.show(y, "y")
    _assert_rows_are_jax(view, y)
    assert len(view.data["rows"]) == 8
    assert "every device holds a different block" in view.data["summary"]
    assert view.data["summary"].startswith("jax.pmap's output: NamedSharding over its own 1-D")
    assert "split along axis 0" in view.data["summary"]
    moved = jax.pmap(lambda v: v * 2, out_axes=1)(jnp.ones((8, 3)))
    assert "split along axis 1" in showarray.show(moved).data["summary"]


def test_a_single_device_array_is_held_whole_by_its_device():
    z = jnp.ones((3, 5))
    view = showarray.show(z, "z")
    _assert_rows_are_jax(view, z)
    (row,) = view.data["rows"]
    assert row["shape"] == z.shape and view.data["mesh"] is None
    assert type(z.sharding).__name__ in view.data["summary"]
    assert "role='img'" in view.html()


def test_the_text_form_has_the_title_the_words_and_a_line_per_device():
    x = _put((4, 8, 16), P(None, "data", "model"))
    view = showarray.show(x)
    lines = str(view).splitlines()
    assert lines[0] == view.title and lines[1] == view.data["summary"]
    shards = {s.device: s for s in x.addressable_shards}
    for dev, index in x.sharding.devices_indices_map(x.shape).items():
        (line,) = [ln for ln in lines if ln.split()[:1] == [str(dev)]]
        columns = [c.strip() for c in line.split("  ") if c.strip()]
        assert columns == [str(dev), index_text(index), fmt_shape(shards[dev].data.shape)]
    assert "<" not in str(view)


def test_a_pytree_gives_a_section_per_leaf_named_by_its_path():
    a, b = _put((8, 4), P("data")), jnp.ones(3)
    view = showarray.show({"a": a, "b": [b]}, "params")
    names = [leaf["name"] for leaf in view.data["leaves"]]
    assert names == ["params['a']", "params['b'][0]"]
    html = view.html()
    assert "params[&#x27;a&#x27;]" in html and "params[&#x27;b&#x27;][0]" in html
    assert {r["array"] for r in view.data["rows"]} == set(names)
    assert len(view.data["rows"]) == len(a.addressable_shards) + 1
    text = str(view)
    assert "params['a']: (8, 4)" in text and "params['b'][0]: (3,)" in text
    assert len(view.to_frame()) == len(view.data["rows"])


def test_a_name_with_markup_is_never_markup():
    x = _put((8, 4), P("data"))
    for view in (showarray.show(x, EVIL), showarray.show({"a": x}, EVIL)):
        html = view._repr_html_()
        assert "<img" not in html and "&lt;img" in html


def test_axis_names_of_a_real_mesh_are_escaped_too():
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("<b>", "m"))
    x = jax.device_put(jnp.ones((4, 8)), NamedSharding(mesh, P("<b>", "m")))
    html = showarray.show(x).html()
    assert "<b>=" not in html and "&lt;b&gt;=0" in html


@pytest.mark.parametrize(
    "value, said",
    [
        (np.ones((2, 3)), "numpy.ndarray of shape (2, 3)"),
        ([1, 2], "x is a list and x[0] is an int"),
        ("text", "x is a str"),
        ({}, "holds no arrays"),
    ],
)
def test_anything_but_jax_arrays_is_refused_with_what_was_given(value, said):
    with pytest.raises(ValueError, match="takes a jax.Array or a pytree of them") as err:
        showarray.show(value)
    assert said in str(err.value)
    if isinstance(value, np.ndarray):
        assert "jax.device_put(x)" in str(err.value)


def test_a_traced_or_deleted_array_is_refused_with_what_to_do():
    seen = []

    @jax.jit
    def f(v):
        with pytest.raises(ValueError, match="traced value") as err:
            showarray.show(v)
        seen.append(str(err.value))
        return v

    f(jnp.ones(2))
    assert seen and "outside the transformed function" in seen[0]
    gone = jnp.ones(4) + 1
    gone.delete()
    with pytest.raises(ValueError, match="has been deleted"):
        showarray.show(gone)


class _OtherProcess:
    """A real array seen from a process that holds only the first four devices' shards."""

    def __init__(self, x):
        self._x = x
        self.addressable_shards = [s for s in x.addressable_shards if s.device.id < 4]

    def __getattr__(self, name):
        return getattr(self._x, name)


def test_an_array_not_fully_addressable_draws_what_is_here_and_says_what_is_not():
    x = _put((8, 4), P("data", "model"))
    body, text, data = showarray._section(_OtherProcess(x), "x", titled=False)
    assert [r["id"] for r in data["rows"]] == [0, 1, 2, 3]
    assert data["not_here"] == [4, 5, 6, 7]
    assert "other processes" in body and "device 4 (not here)" in body
    assert "not in this process: devices [4, 5, 6, 7]" in text


def test_importing_the_module_does_not_import_jax():
    code = "import sys, pmapviz.core.drawing.showarray; assert 'jax' not in sys.modules"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_refusal_without_jax_loaded_does_not_start_jax():
    code = (
        "import sys, numpy, pmapviz.core.drawing.showarray as s\n"
        "try:\n    s.show(numpy.ones(2))\nexcept ValueError as e:\n    print(e)\n"
        "assert 'jax' not in sys.modules"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "jax.device_put" in r.stdout
