"""pmap's pipeline as JAX 0.10 makes it, read from its jaxpr: the stages in order, each type as
JAX prints it (checked against JAX's own text of the jaxpr and against the planner's blocks,
which tests/core/planning proves against real pmap), the names of the arrays each step is
for, and JAX's own refusal (equal to the real call's) where it refuses."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from pmapviz.core.expressions import expr, functions
from pmapviz.core.planning.planning import plan
from pmapviz.features.explorer import presets
from pmapviz.features.smap import pmappipeline
from pmapviz.features.smap.pmappipeline import pmap_pipeline
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES
PMAP = ("jit", "shard_map", "squeeze", "f", "broadcast_in_dim")


def _types(pipe) -> list[str]:
    return [t for s in pipe.stages for e in s.equations for t in (*e.in_types, *e.out_types)]


def _block(shape, dtype="f32") -> str:
    return f"{dtype}[{','.join(map(str, shape))}]"


def test_a_pmap_is_jit_of_shard_map_squeeze_f_broadcast():
    program = functions.get("normalise")
    p = plan(program, [(N, 4)], axis_name="i", n_devices=N)
    pipe = pmap_pipeline(program, p)
    assert pipe.refused is None and pipe.kinds == PMAP
    shard_map = dict(pipe.stage("shard_map").equations[0].params)
    assert shard_map["in_specs"] == "(P('i',),)" and shard_map["out_specs"] == "(P('i',),)"
    assert f"Mesh('i': {N}" in shard_map["mesh"] and shard_map["check_vma"] == "False"
    (squeeze,) = pipe.stage("squeeze").equations
    assert squeeze.names == ("x",) and dict(squeeze.params)["dimensions"] == "(0,)"
    # the block JAX hands each device, and the slice f sees: the planner's, read from JAX
    assert squeeze.in_types == ("f32[1,4]",) and squeeze.out_types == (
        _block(p.leaves[0].local_shape),
    )
    assert [e.primitive for e in pipe.stage("f").equations] == ["reduce_sum", "psum", "div"]
    (back,) = pipe.stage("broadcast_in_dim").equations
    assert back.names == ("out",) and back.out_types == ("f32[1,4]",)
    assert pipe.outputs == (("out", (N, 4), "float32"),)


def test_every_type_shown_is_one_jax_printed_in_its_jaxpr():
    """The oracle is JAX's own text of the jaxpr (``str`` of the ClosedJaxpr), re-traced here."""
    program = expr.program("x, p", "jnp.tanh(x @ p['w'] + p['b'])")
    p = plan(program, [(N, 3, 5), {"w": (5, 2), "b": (2,)}], in_axes=(0, None), n_devices=N)
    pipe = pmap_pipeline(program, p)
    fn = program.build(None)
    args = pmappipeline.abstract_args(p)
    text = str(jax.make_jaxpr(jax.pmap(fn, in_axes=(0, None), devices=jax.devices()[:N]))(*args))
    assert pipe.jaxpr == text
    for t in _types(pipe):
        assert f":{t}" in text, t
    jit = pipe.stage("jit").equations[0]
    assert jit.in_types == (f"f32[{N},3,5]", "f32[2]", "f32[5,2]")  # JAX's leaf order: b, w
    assert pipe.stage("squeeze").equations[0].names == ("x",)  # p is not mapped: no squeeze


def test_out_axes_none_has_no_broadcast_and_a_replicated_out_spec():
    program = functions.get("global_sum")
    p = plan(program, [(N, 4)], out_axes=None, axis_name="i", n_devices=N)
    pipe = pmap_pipeline(program, p)
    assert pipe.kinds == PMAP[:-1]
    assert dict(pipe.stage("shard_map").equations[0].params)["out_specs"] == "(P(),)"


def test_a_pytree_output_names_each_leaf_and_puts_back_only_the_mapped_ones():
    program = expr.program("x, y", "(x * 2, lax.psum(jnp.sum(y), 'i'))")
    p = plan(program, [(N, 3), (N, 2)], out_axes=(1, None), axis_name="i", n_devices=N)
    assert p.ok, p.problems
    pipe = pmap_pipeline(program, p)
    assert [e.names for e in pipe.stage("squeeze").equations] == [("x",), ("y",)]
    (back,) = pipe.stage("broadcast_in_dim").equations
    assert back.names == ("out[0]",) and back.out_types == ("f32[3,1]",)
    assert [name for name, _, _ in pipe.outputs] == ["out[0]", "out[1]"]


def test_jaxs_refusal_is_the_real_calls():
    """A mapped axis twice the devices: pmap refuses, in the words of a real call on real
    arrays."""
    program = functions.get("double")
    p = plan(program, [(2 * N, 3)], n_devices=N)
    pipe = pmap_pipeline(program, p)
    assert pipe.stages == () and pipe.refused is not None
    with pytest.raises(ValueError) as real:
        jax.pmap(program.build(None), devices=jax.devices()[:N])(np.zeros((2 * N, 3), np.float32))
    assert pipe.refused.text == f"ValueError: {real.value}"
    assert "cannot select an axis to squeeze out" in pipe.refused.message


def test_a_negative_in_axes_is_read_as_jax_reads_it():
    """in_axes=-2 on (N, 3) means axis 0: pmap splits axis 0 (its in_specs say so); -1 on
    (3, N) is refused, as JAX 0.10's pmap splits axis 0 whatever a negative axis says."""
    program = functions.get("double")
    ok = pmap_pipeline(program, plan(program, [(N, 3)], in_axes=(-2,), n_devices=N))
    assert ok.kinds == PMAP and "P('_internal_pmap_axis_name',)" in ok.jaxpr
    refused = pmap_pipeline(program, plan(program, [(3, N)], in_axes=(-1,), n_devices=N))
    if N > 1:
        assert refused.refused is not None and "evenly divisible" in refused.refused.message


def test_planned_for_more_devices_than_this_process_has_says_why_not():
    program = functions.get("double")
    pipe = pmap_pipeline(program, plan(program, [(2 * N, 3)], n_devices=2 * N))
    assert pipe.refused is not None and not pipe.refused.asked
    assert f"for {2 * N:,} devices and this process has {N:,}" in pipe.refused.not_asked


def test_pipelines_are_kept_per_plan():
    program = functions.get("add")
    p = plan(program, [(N, 3), (N, 3)], n_devices=N)
    assert pmappipeline.pipeline_of(program, p) is pmappipeline.pipeline_of(program, p)


@pytest.mark.parametrize("preset", presets.PRESETS, ids=[p.key for p in presets.PRESETS])
def test_every_preset_reads_as_jax_runs_it(preset):
    """Each preset on this process's devices: valid ones are jit -> shard_map -> squeeze (one
    per mapped input) -> f -> broadcast (one per mapped output); the lessons as JAX takes them
    (out_axes=None runs, silently; 10M pairs on N devices is refused)."""
    program, p, errors = preset.scenario(N).plan(N)
    pipe = pmap_pipeline(program, p)
    if preset.key == "seed_noreshape":
        assert pipe.refused is not None and pipe.refused.asked
        return
    assert pipe.kinds[:3] == ("jit", "shard_map", "squeeze"), pipe.kinds
    squeezed = [e.names[0] for e in pipe.stage("squeeze").equations]
    assert squeezed == [leaf.name for leaf in p.leaves if leaf.axis is not None]
    back = pipe.stage("broadcast_in_dim")
    mapped_out = [name for name, _, _ in pipe.outputs] if p.out_axes is not None else []
    assert (back.equations[0].names[0] if back else None) == (mapped_out or [None])[0]
    assert pipe.to_dict()["stages"][0]["kind"] == "jit"
