"""The smap call: its code as written, its trace on abstract inputs (the types as JAX prints
them: split, varying), and JAX's words for a call it refuses, which are the words the same
call on real arrays gets."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from pmapviz.core.expressions import expr, functions
from pmapviz.core.planning.planning import plan
from pmapviz.features.smap import smapcall
from pmapviz.features.smap.smapsettings import AUTO, SmapSettings
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def _double(shape, **kw):
    program = functions.get("double")
    return program, plan(program, [shape], n_devices=N, **kw)


def test_blocks_and_specs():
    _, p = _double((2 * N, 3))
    assert smapcall.mapped_size(p) == 2 * N and smapcall.block(p, N) == 2
    assert smapcall.block(p, 3) == (None if 2 * N % 3 else 2 * N // 3)  # the mesh must divide it
    assert smapcall.spec(1, 3, "i") == (None, "i") and smapcall.spec(-1, 2, "i") == (None, "i")
    assert smapcall.spec(None, 2, "i") == () and smapcall.axis_name(p) == "i"


def test_the_call_as_written_for_each_setting():
    program = expr.program("x, p", "x * p['scale'] + p['shift']")
    p = plan(
        program,
        [(4, 6), {"scale": (6,), "shift": (4, 6)}],
        in_axes=(0, {"scale": None, "shift": 0}),
        axis_name="b",
        n_devices=N,
    )
    lines = smapcall.call_lines(p, SmapSettings(mesh_devices=4), N)
    assert lines == [
        "mesh = jax.make_mesh((4,), ('b',), devices=jax.devices()[:4])  # Explicit axes: "
        "make_mesh's default",
        "with jax.set_mesh(mesh):",
        "    x = jax.reshard(x, P('b'))",
        "    p = {'scale': p['scale'], 'shift': jax.reshard(p['shift'], P('b'))}",
        "    out = jax.smap(f_block, in_axes=(0, {'scale': None, 'shift': 0}), out_axes=0, "
        "axis_name='b')(x, p)",
    ]
    bare = smapcall.call_lines(p, SmapSettings(4, AUTO, False, False), N)
    assert "axis_types=(AxisType.Auto,)" in bare[0]
    assert bare[1:] == ["out = jax.smap(f_block, out_axes=0, axis_name='b')(x, p)"]


def test_smaps_trace_types_its_arrays_split_and_each_block_varying():
    program = functions.get("normalise")
    p = plan(program, [(N, 4)], axis_name="i", n_devices=N)
    pipe = smapcall.smap_pipeline(program, p, SmapSettings())
    assert pipe.refused is None
    assert pipe.kinds == ("reshard", "shard_map", "squeeze", "f", "broadcast_in_dim")
    (reshard,) = pipe.stage("reshard").equations
    assert reshard.names == ("x",) and reshard.out_types == (f"f32[{N}@i,4]",)
    assert pipe.stage("squeeze").equations[0].in_types == ("f32[1,4]{V:i}",)
    assert f"f32[{N}@i,4]" in pipe.jaxpr and "{V:i}" in pipe.jaxpr  # JAX's own text
    auto = smapcall.smap_pipeline(program, p, SmapSettings(mode=AUTO))
    assert auto.kinds[0] == "shard_map" and f"f32[{N},4]" in auto.jaxpr  # no sharding in types


def test_a_block_of_several_vmaps_f_over_it():
    _, p = _double((2 * N, 3))
    pipe = smapcall.smap_pipeline(functions.get("double"), p, SmapSettings())
    assert pipe.kinds == ("reshard", "shard_map", "f")  # no squeeze: f is vmapped over the block
    assert pipe.outputs == (("out", (2 * N, 3), "float32"),)
    assert "f32[2,3]{V:i}" in pipe.jaxpr


def _eager(program, p, s: SmapSettings, args):
    """The same call on real arrays, eagerly, as the script makes it."""
    m = s.devices_for(p.n_devices)
    mesh = smapcall.make_mesh(s, m, smapcall.axis_name(p))
    with smapcall.mesh_context(s, mesh):
        sm = smapcall.smap_of(program, p, s, m)
        return sm(*smapcall.place(p, s, list(args), mesh))


@pytest.mark.parametrize(
    "shape, s",
    [
        ((N, 4), SmapSettings(set_mesh=False)),
        ((N, 4), SmapSettings(set_mesh=False, reshard=False)),
        ((N, 4), SmapSettings(reshard=False)),
        ((N, 4), SmapSettings(mode=AUTO, in_axes=False)),
        ((3, 4), SmapSettings(mesh_devices=2)),
        ((3, 4), SmapSettings(mesh_devices=2, mode=AUTO)),
    ],
    ids=["no-mesh", "no-mesh-no-reshard", "no-reshard", "auto-no-in-axes", "3-on-2", "auto-3-on-2"],
)
def test_jaxs_words_on_abstract_inputs_are_the_real_calls(shape, s):
    program, p = _double(shape)
    said = smapcall.smap_pipeline(program, p, s).refused
    assert said is not None and said.asked
    with pytest.raises(Exception) as real:  # noqa: B017 -- whatever JAX raises, compared below
        _eager(program, p, s, [np.zeros(shape, np.float32)])
    assert said.error_type.endswith(type(real.value).__name__) and said.message == str(real.value)


def test_jit_vmap_traces_the_reference_shapes_or_refuses():
    program, p = _double((N, 4), out_axes=1)
    vm = smapcall.vmap_pipeline(program, p)
    assert vm.outputs == (("out", (4, N), "float32"),)
    refused = smapcall.vmap_pipeline(program, _double((N, 4), out_axes=None)[1])
    assert refused.refused is not None and "out_axes" in refused.refused.message
    assert jax.eval_shape(jax.vmap(lambda x: x * 2, out_axes=1), np.zeros((N, 4))).shape == (4, N)
