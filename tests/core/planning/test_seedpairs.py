"""pmapviz.core.planning.seedpairs: the seed's pairs on n devices, as JAX reshapes and pmaps
them, and its words in the same numbers, on counts that divide 10,000,000 and counts that
do not."""

import jax
import jax.numpy as jnp
import pytest

from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.planning import seedpairs
from pmapviz.features.live import dotproduct
from tests.conftest import TEST_DEVICES


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 8, 16, 4096])
def test_the_split_is_the_reshape_jax_makes_of_the_pairs_used(n):
    s = seedpairs.split(n)
    assert s.used % n == 0 and 0 <= s.left_over < n and s.used + s.left_over == s.pairs
    pairs = jax.ShapeDtypeStruct((s.pairs, 3), jnp.float32)  # abstract: nothing allocated
    out = jax.eval_shape(lambda x: x[: s.used].reshape(n, -1, 3), pairs)
    assert out.shape == s.blocked and (s.used, 3) == s.flat
    whole = lambda x: x.reshape(n, -1, 3)  # noqa: E731  all the pairs: where n divides them
    if s.left_over:
        with pytest.raises(TypeError, match="reshape"):
            jax.eval_shape(whole, pairs)
    else:
        assert jax.eval_shape(whole, pairs).shape == s.blocked


@pytest.mark.parametrize("n", sorted({1, 3, TEST_DEVICES}))
def test_pmap_of_vmap_dot_gives_one_block_a_device(n):
    s = seedpairs.split(n)
    x = jax.ShapeDtypeStruct(s.blocked, jnp.float32)
    pm = jax.pmap(jax.vmap(jnp.dot), devices=jax.devices()[:n])
    assert jax.eval_shape(pm, x, x).shape == (n, s.block)


def test_words_name_the_reshape_and_what_is_left_out():
    eight, three = seedpairs.split(8), seedpairs.split(3)
    assert eight.reshape_words() == "reshape `(10_000_000, 3)` to `(8, 1_250_000, 3)`"
    assert three.left_over == 1 and "take the first 9,999,999 pairs" in three.reshape_words()
    assert f"reshape `{fmt_shape(three.flat)}` to `(3, 3_333_333, 3)`" in three.reshape_words()
    assert "10,000,000 do not split evenly over 3 devices" in three.reshape_words()


def test_the_seed_is_the_live_examples_default_and_every_device_gets_a_pair():
    assert seedpairs.SEED_PAIRS == dotproduct.DEFAULT_PAIRS
    with pytest.raises(ValueError, match="cannot give each of 11 devices a pair"):
        seedpairs.split(11, pairs=10)
