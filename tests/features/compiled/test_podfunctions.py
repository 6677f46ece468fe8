"""A notebook's f and arguments as a program for a TPU slice: a plain f is pmapped over the
slice's devices (its mapped axis resized to them), a ``jax.jit(f)`` lowered on a 1-D mesh
``chips`` with each argument split where it divides, else replicated; bad arguments are
refused with the fix. One compile, on v5e:2x4."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pmapviz.core.pods import podcompile, podtopology, tpuchips
from pmapviz.features.compiled.podfunctions import program_for


def psum_i(x):
    """The sum over the mapped axis 'i'."""
    return jax.lax.psum(x, "i")


def scaled_sum(x, w):
    """The sum over the mapped axis 'i', scaled by w's sum."""
    return jax.lax.psum(x, "i") * w.sum()


def arg_shardings(text):
    """Each argument's sdy sharding in a lowered module's text, in order."""
    return re.findall(
        r"%arg\d+: tensor<[^>]*> \{sdy\.sharding = #sdy\.sharding<@mesh, (\[.*?\])>", text
    )


def test_a_plain_f_is_pmapped_over_the_slice_and_its_psum_is_an_all_reduce():
    prog = program_for(psum_i, (np.ones((3, 4), np.float32),))
    assert prog.key.startswith("notebook:psum_i:") and prog.label == "psum_i"
    assert prog.code == "jax.pmap(psum_i, in_axes=0, axis_name='i')"
    pod = podtopology.load("v5e:2x4")
    low = prog.lower(pod, None)
    assert [tuple(a.shape) for a in low.lowered.args_info[0]] == [(8, 4)]  # 3 -> 8
    r = podcompile.compile_for(prog, "v5e:2x4")
    reduces = [c for c in r.collectives if c.kind == "all-reduce"]
    assert len(reduces) == 1
    ar = reduces[0]
    assert [sorted(g) for g in ar.groups] == [sorted(c.id for c in pod.chips)]
    assert ar.bytes == 4 * 4  # one f32[4] block a device
    assert ar.crossing == 1  # the group spans both hosts
    g, link = 8, tpuchips.GENERATIONS["v5e"].ici_link_gbs * 1e9
    # 2x4 spans two axes, both lines below the full pod's 16: one link each
    assert ar.model_s == pytest.approx(2 * (g - 1) / g * ar.bytes / (2 * link))


def test_in_axes_and_axis_name_go_to_pmap_and_into_the_key():
    x, w = np.ones((2, 5), np.float32), np.ones(3, np.float32)
    one = program_for(scaled_sum, (x, w), in_axes=(1, None))
    assert one.code == "jax.pmap(scaled_sum, in_axes=(1, None), axis_name='i')"
    other = program_for(scaled_sum, (x, w), in_axes=(1, None), axis_name="j")
    assert other.key != one.key and "axis_name='j'" in other.code
    low = one.lower(podtopology.load("v5e:2x2"), None)
    assert [tuple(a.shape) for a in low.lowered.args_info[0]] == [(2, 4), (3,)]


def test_a_jitted_f_splits_the_arguments_that_divide_and_replicates_the_rest():
    @jax.jit
    def total(x, y):
        return x.sum() + y.sum()

    args = (jnp.ones((16, 4)), jax.ShapeDtypeStruct((3, 5), jnp.float32))
    prog = program_for(total, args)
    assert prog.label == "total" and ".lower(*args)" in prog.code
    pod = podtopology.load("v5e:2x4")
    low = prog.lower(pod, None)
    assert low.mesh_axes == (("chips", 8),)
    assert low.order == tuple(int(d.id) for d in pod.devices)
    text = low.lowered.as_text()
    assert arg_shardings(text) == ['[{"chips"}, {}]', "[{}, {}]"]  # 16 splits over 8; 3 not
    assert [tuple(a.shape) for a in low.lowered.args_info[0]] == [(16, 4), (3, 5)]


def test_bad_arguments_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="no arguments"):
        program_for(psum_i, ())
    with pytest.raises(ValueError, match="Fix: in_axes=0"):
        program_for(psum_i, (np.ones(4), np.ones(4)), in_axes=(0,))
    with pytest.raises(ValueError, match="the mapped axes differ.*Fix"):
        program_for(psum_i, (np.ones(4), np.ones(5)))
