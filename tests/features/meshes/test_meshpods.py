"""Your f on a named mesh, laid on a TPU slice: a mesh of another size is refused in one line
that names both device counts and a slice that would take it; a mesh that fits lowers with its
axes as given (lowered, not compiled)."""

import re

import pytest

from pmapviz.core.pods import podtopology, tpuchips
from pmapviz.features.meshes import meshpods
from pmapviz.features.meshes.meshspecs import Mesh


def devices_of(name):
    """Devices the compiler sees on ``name``: two a chip on v4, one elsewhere."""
    topo = tpuchips.parse_topology(name)
    return topo.chips * (2 if topo.generation.name == "v4" else 1)


def test_a_mesh_of_the_slices_size_fits():
    assert meshpods.fit_problem(Mesh((2, 4), ("data", "model")), "v5e:2x4") is None
    assert meshpods.fit_problem(Mesh((16,), ("chips",)), "v4:2x2x2") is None  # 2 cores a chip


@pytest.mark.parametrize(("shape", "topology"), [((2, 2), "v5e:2x4"), ((4, 8), "v5e:4x4")])
def test_another_size_names_both_counts_and_a_slice_that_has_them(shape, topology):
    mesh = Mesh(shape, ("data", "model"))
    message = meshpods.fit_problem(mesh, topology)
    want, have = mesh.devices, devices_of(topology)
    assert f"has {want} devices and {topology} has {have}" in message
    assert mesh.text() in message
    suggested = re.findall(r"v\d[a-z]?:[0-9x]+", message.split("pick", 1)[1])
    suggested = [s for s in suggested if s != topology]
    assert suggested, message
    assert all(devices_of(s) == want for s in suggested), suggested
    assert f"make the mesh's sizes multiply to {have}" in message
    assert "\n" not in message


def test_a_size_no_slice_offers_says_so():
    message = meshpods.fit_problem(Mesh((7,), ("x",)), "v5e:2x4")
    assert "has 7 devices" in message and "no offered slice has that many" in message


def test_a_fitting_mesh_lowers_with_its_axes_and_specs():
    mesh = Mesh((2, 4), ("data", "model"))
    specs = [("data", None), (None, "model")]
    prog = meshpods.pod_program(mesh, [(8, 16), (16, 32)], specs, "x, w", "jnp.tanh(x @ w)")
    assert prog.key.startswith("f:") and "data=2 x model=4" in prog.label
    assert "jax.make_mesh((2, 4), ('data', 'model'))" in prog.code
    other = meshpods.pod_program(mesh, [(8, 16), (16, 32)], specs, "x, w", "x @ w")
    assert other.key != prog.key
    low = prog.lower(podtopology.load("v5e:2x4"), None)
    assert low.mesh_axes == (("data", 2), ("model", 4))
    text = low.lowered.as_text()
    assert '[{"data"}, {}]' in text and '[{}, {"model"}]' in text
