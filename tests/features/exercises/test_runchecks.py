"""The checks judged by a live run, each on its own: your own f under pmap against
jit(vmap(jnp.dot)) of the same pairs, and a collective's output against the ring shift."""

import numpy as np

from pmapviz.core.expressions import expr
from pmapviz.features.exercises import runchecks
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def _f(body: str):
    return {"body": expr.program("x, y", body)}


def test_dot_pairs_takes_one_dot_product_per_pair():
    assert runchecks.dot_pairs(_f("jax.vmap(jnp.dot)(x, y)"), N).solved
    assert runchecks.dot_pairs(_f("jnp.einsum('pk,pk->p', x, y)"), N).solved


def test_dot_pairs_refuses_vdot_by_its_shape_and_other_numbers_by_their_values():
    vdot = runchecks.dot_pairs(_f("jnp.vdot(x, y)"), N)
    assert vdot.kind == "WrongResult (one number per pair)" and f"({N}, 4)" in vdot.words
    other = runchecks.dot_pairs(_f("jnp.sum(x * x, axis=-1)"), N)
    assert other.kind == "WrongResult (numbers differ from jit(vmap(jnp.dot)))"


def test_dot_pairs_gives_jaxs_words_for_a_call_jax_refuses():
    judged = runchecks.dot_pairs(_f("lax.psum(x, 'j')"), N)
    assert not judged.solved and "NameError" in judged.kind and "unbound axis" not in judged.kind
    assert "j" in judged.said


def test_ring_shift_wants_each_device_to_hold_its_left_neighbours_x():
    assert runchecks.ring_shift({"c": "ppermute", "perm": "ring right"}, N).solved
    pairs = ", ".join(f"{j}->{(j + 1) % N}" for j in range(N))
    assert runchecks.ring_shift({"c": "ppermute", "perm": pairs}, N).solved
    left = runchecks.ring_shift({"c": "ppermute", "perm": "ring left"}, N)
    assert left.kind == "WrongResult (ppermute is not a shift to the right)"
    psum = runchecks.ring_shift({"c": "psum", "perm": ""}, N)
    assert psum.kind == "WrongResult (psum is not a shift to the right)"


def test_ring_shift_refuses_pairs_that_are_no_permutation_in_its_own_words():
    judged = runchecks.ring_shift({"c": "ppermute", "perm": "0->1, 0->2"}, N)
    assert judged.kind == "CollectiveError (pairs that are no permutation)"
    assert "Device 0" in judged.words
    typed = runchecks.ring_shift({"c": "ppermute", "perm": "<b>99->7</b>"}, N)
    assert "99" not in typed.kind and "<b>" not in typed.kind


def test_the_target_is_the_left_neighbours_value():
    before = [np.array([v], np.float32) for v in (1, 2, 3)]
    assert [t.tolist() for t in runchecks.target(before)] == [[3.0], [1.0], [2.0]]
