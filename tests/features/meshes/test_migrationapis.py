"""The traps JAX's API answers: split sizes, shard_map's check of out_specs=P() against a plain
call, and the nested pmap on a device count that does not split (3: 3 x 1)."""

import jax
import pytest

from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.meshes import migrationapis


def _plan(n, **changes):
    given = {"fn": "double", "s0": f"{n}, 4", "s1": "", "a1": "0", **changes}
    program, plan, errors = Scenario.from_texts(given, n).plan(n)
    assert not errors and plan.ok, (errors, plan.problems)
    return program, plan


@pytest.mark.parametrize("n, want", [(1, (1, 1)), (3, (3, 1)), (8, (2, 4)), (9, (3, 3))])
def test_the_mapped_axis_splits_in_two_outer_the_smallest_factor(n, want):
    assert migrationapis.split_in_two(n) == want


def test_shard_map_accepts_out_specs_p_exactly_where_every_device_agrees():
    program, plan = _plan(8)
    xs = [jax.numpy.zeros((8, 4))]
    varying = migrationapis.shard_map_replicated(program.build(None), plan, xs)
    assert varying.startswith("ValueError: shard_map applied to the function 'f_block'")
    program, plan = _plan(8, fn="expr", args="x", body="lax.psum(x, 'i')", out="None", name="i")
    assert migrationapis.shard_map_replicated(program.build("i"), plan, xs) == ""


def test_nested_pmap_on_three_devices_is_refused_too():
    program, plan = _plan(3, s0="3, 4")
    trap = migrationapis.nested_trap(program.build(None), plan)
    assert (trap.facts["outer"], trap.facts["inner"]) == (3, 1) and trap.facts["refused"]
    assert "should match the mesh passed to shard_map" in trap.jax_words
    assert "`x` (3, 1, 4)" in trap.said  # the user's name as a code span


def test_said_is_the_exceptions_type_and_its_lines_joined():
    assert migrationapis.said(ValueError("one\ntwo")) == "ValueError: one two"
