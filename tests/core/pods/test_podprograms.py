"""Programs for a pod: the mesh's sizes on a slice, the batch rounded up to split over the
first mesh axis, a pmap target re-pointed at the slice's devices, and the largest batch that
fits where a program does not. Most tests lower without compiling; a few compile on v5e."""

import math
from collections import OrderedDict
from dataclasses import replace

import pytest

from pmapviz.core.pods import podcompile, podprograms, podtopology
from pmapviz.core.pods.podprograms import mesh_shape
from pmapviz.core.running.programanalysis import Target

MIB = 1024**2


def arg_shapes(low):
    """The global shapes of a lowered program's arguments."""
    return [tuple(a.shape) for a in low.lowered.args_info[0]]


def test_mesh_shape_gives_the_leftover_devices_to_the_free_axis():
    assert mesh_shape((("chips", None),), 16) == (16,)
    assert mesh_shape((("data", 2), ("model", None)), 8) == (2, 4)
    assert mesh_shape((("data", None), ("model", 4)), 256) == (64, 4)
    assert mesh_shape((("a", 2), ("b", 4)), 8) == (2, 4)


def test_a_mesh_that_does_not_divide_the_slice_is_refused_with_both_counts():
    with pytest.raises(ValueError) as err:
        mesh_shape((("data", 3), ("model", None)), 8)
    assert "3 devices" in str(err.value) and "8" in str(err.value)


def test_the_built_in_programs_and_their_batches():
    assert set(podprograms.BUILTIN) == {"dot", "train", "psum"}
    for key, make in podprograms.BUILTIN.items():
        assert make().key == key and make().code
    assert podprograms.dot().batch == podprograms.DOT_ROWS
    assert podprograms.train().batch == podprograms.TRAIN_BATCH
    assert podprograms.psum().batch is None  # a fixed block a chip: nothing to shrink
    half = podprograms.train().at_batch(4096)
    assert half.batch == 4096 and half.key == "train"
    assert half != podprograms.train()  # the batch is part of what the program is


def test_the_batch_step_is_the_first_mesh_axis():
    pod = podtopology.load("v5e:2x4")
    assert podprograms.dot().batch_step(pod) == 8
    prog = podprograms.on_mesh("m", "m", "", lambda x: x, lambda b: [], (("d", None), ("m", 2)))
    assert prog.batch_step(pod) == 4


def test_lowering_rounds_the_batch_up_and_keeps_the_global_shapes():
    pod = podtopology.load("v5e:2x4")
    low = podprograms.train(batch=1001, width=128).lower(pod, None)
    assert low.batch == math.ceil(1001 / 8) * 8
    assert arg_shapes(low) == [(128, 128), (low.batch, 128)]
    assert low.mesh_axes == (("chips", 8),)
    assert sorted(low.order) == sorted(c.id for c in pod.chips)
    asked = podprograms.train(batch=1001, width=128).lower(pod, 20)  # a batch given wins
    assert asked.batch == 24


def test_psum_holds_its_block_on_every_chip_whatever_the_slice():
    for name in ("v5e:2x2", "v5e:2x4"):
        pod = podtopology.load(name)
        low = podprograms.psum(rows=64, cols=32).lower(pod, None)
        assert arg_shapes(low) == [(64 * pod.n_devices, 32)], name


def test_a_batch_not_divisible_by_16_compiles_rounded_up_on_4x4():
    rows = 16 * 62 + 5
    r = podcompile.compile_for(podprograms.dot(rows), "v5e:4x4", find_batch=False)
    assert r.batch == math.ceil(rows / 16) * 16 == 1008
    assert r.mesh_axes == (("chips", 16),)
    assert r.fits and r.collectives == ()  # each chip dots its own rows


def test_a_target_is_re_pointed_at_the_slice_with_its_mapped_axis_resized():
    import jax
    import jax.numpy as jnp

    def fn(x, y):
        return jax.lax.psum(x, "i") * y.sum()

    args = (jax.ShapeDtypeStruct((3, 8), jnp.float32), jax.ShapeDtypeStruct((5,), jnp.float32))
    target = Target("mine", "jax.pmap(fn)", fn, args, (1, None), 0, "i", 8)
    prog = podprograms.from_target(target, "t:1")
    assert (prog.key, prog.label, prog.batch) == ("t:1", "mine", None)
    pod = podtopology.load("v5e:2x2")
    low = prog.lower(pod, None)
    assert arg_shapes(low) == [(3, 4), (5,)]  # the mapped axis is the slice's 4 devices
    assert low.mesh_axes == (("pmap", 4),)
    assert low.order == tuple(int(d.id) for d in pod.devices)


def test_a_batch_the_compiler_refuses_for_hbm_is_shown_at_the_largest_batch_that_fits():
    """libtpu refuses a program over HBM (RESOURCE_EXHAUSTED): the report says so in the
    compiler's words and shows the largest batch that compiles; 3 % more is refused. (The dot
    products: memory linear in the rows, and quick to compile.)"""
    asked = 6_000_000_000
    r = podcompile.compile_for(podprograms.dot(asked), "v5e:2x4")
    assert not r.fits and r.asked_batch == asked and "the compiler allows" in r.refusal
    # the compiler's G is GiB, said as GiB: 15.75 of a v5e chip's 16
    assert "allows 15.75 GiB of HBM a device" in r.refusal and "G of" not in r.refusal
    assert r.label.endswith(f"x f32[{r.batch},3], y f32[{r.batch},3]")  # the batch shown
    assert [c.what for c in r.changes] == ["batch"] and r.changes[-1].asked == asked
    assert r.largest_batch == r.batch and asked // 2 <= r.batch < asked and r.batch % 8 == 0
    assert f"does not fit at batch {asked:,}" in r.fit_words()
    more = (int(r.batch * 1.03) // 8) * 8
    with pytest.raises(podcompile.DoesNotFit):
        podcompile.compile_once(podprograms.dot(more), podtopology.load("v5e:2x4"))


def test_the_largest_batch_fits_and_six_percent_more_does_not(monkeypatch):
    """The search on real compiles, each device's HBM share set to 6 MiB (the dot's memory is
    linear in its rows: ~4.6 bytes a row a device)."""
    share = 6 * MIB
    compile_once = podcompile.compile_once
    monkeypatch.setattr(
        podcompile, "compile_once", lambda p, pod: replace(compile_once(p, pod), hbm_bytes=share)
    )
    monkeypatch.setattr(podcompile, "_KEPT", OrderedDict())  # none of these kept for others
    prog = podprograms.dot(2**21)
    r = podcompile.compile_for(prog, "v5e:2x4")
    assert not r.fits and r.peak_bytes > share
    best = r.largest_batch
    assert best and best % 8 == 0 and best < 2**21
    assert f"{best:,} dot products" in r.fit_words()
    assert podcompile.compile_for(prog.at_batch(best), "v5e:2x4", find_batch=False).fits
    more = round(best * 1.06 / 8) * 8
    assert not podcompile.compile_for(prog.at_batch(more), "v5e:2x4", find_batch=False).fits
