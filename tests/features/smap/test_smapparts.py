"""Where smap runs but parts from pmap: settings pmap refuses (a larger axis, in blocks), a
collective over blocks of several elements, and a negative out_axes (smap in JAX 0.10 joins
the blocks along axis 0, silently). Each is read from JAX's traces and shown in the run's
measured numbers; the fixes, applied, agree."""

from __future__ import annotations

from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.smap import smapcompare, smapparts
from pmapviz.features.smap.smapsettings import SmapSettings
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def _compare(texts: dict, s: SmapSettings | None = None):
    program, p, errors = Scenario.from_texts(texts, N).plan(N)
    assert not errors, errors
    return p, smapcompare.compare(program, p, s or SmapSettings())


def test_a_mapped_axis_larger_than_the_devices_runs_in_blocks_where_pmap_refuses():
    p, c = _compare({"fn": "double", "s0": f"{2 * N}, 3"})
    assert not p.ok and c.pmap.refused is not None
    assert f"{2 * N} elements need {2 * N} devices" in c.pmap_refuses
    assert "a block of 2" in c.pmap_refuses and c.part is None
    assert c.ok and c.run.vs_pmap is None and c.run.block == 2


def test_a_collective_over_blocks_of_several_elements_parts_and_the_fix_agrees():
    if N < 2:
        return  # one device: every block is the whole axis, one element each
    texts = {"fn": "normalise", "s0": f"{N}, 4", "name": "i"}
    p, c = _compare(texts, SmapSettings(mesh_devices=N // 2 if N % 2 == 0 else 1))
    assert c.part is not None and c.part.code == "collective_over_blocks"
    assert (
        "psum_invariant over 'i'" in c.part.message
    )  # JAX's name for it and c.part.changes == {"mesh_devices": N}
    assert not c.run.passed and c.run.vs_pmap.max_abs_diff > 0  # measured: they differ
    assert _compare(texts, SmapSettings().changed(c.part.changes))[1].ok


def test_a_negative_out_axes_is_joined_along_axis_0_and_the_shapes_say_so():
    texts = {"fn": "double", "s0": f"{N}, 3, 4", "out": "-1"}
    p, c = _compare(texts)
    if N == 1:
        return  # a block of one: axis 0 and the last axis hold the same one element
    assert c.part is not None and c.part.code == "negative_out_axes"
    assert f"returns ({3 * N}, 4, 1), where jit(vmap) returns (3, 4, {N})" in c.part.message
    assert c.run.out_shapes == ((3 * N, 4, 1),)  # the run's own array, as the trace said
    assert not c.run.passed and c.part.explorer == {"out": "2"}
    assert _compare({**texts, **c.part.explorer})[1].ok


def test_collectives_are_read_from_fs_equations():
    _, c = _compare({"fn": "normalise", "s0": f"{N}, 4", "name": "i"})
    assert smapparts.collectives(c.smap.stages, "i") == ("psum_invariant",)  # check_vma's psum
    assert smapparts.collectives(c.smap.stages, "j") == ()
    _, plain = _compare({"fn": "double", "s0": f"{N}, 4"})
    assert smapparts.collectives(plain.smap.stages, "i") == ()  # pvary is no communication
