"""XLA's sharding read back as a PartitionSpec by JAX, checked by making it again."""

import jax
import pytest

from pmapviz.features.types import chosenspec


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((4, 2), ("data", "model"))


@pytest.mark.parametrize(
    "hlo, rank, spec",
    [
        ("{devices=[4,2]<=[8]}", 2, "P('data', 'model')"),
        ("{devices=[4,1,2]<=[8] last_tile_dim_replicate}", 2, "P('data', None)"),
        ("{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}", 2, "P(None, 'model')"),
        ("{devices=[2,4]<=[4,2]T(1,0)}", 2, "P('model', 'data')"),
        ("{devices=[8,1]<=[8]}", 2, "P(('data', 'model'), None)"),
        ("{replicated}", 1, "P(None)"),
    ],
)
def test_jax_reads_each_sharding_as_the_spec_that_makes_it(mesh, hlo, spec, rank):
    got = chosenspec.read(hlo, mesh, rank)
    assert got.spec == spec and got.text == spec and got.hlo == hlo


def test_what_no_spec_says_is_shown_as_xla_wrote_it(mesh):
    for hlo in ("{maximal device=0}", "{manual}", "{devices=[2,1,4]<=[8] last_tile_dims={manual}}"):
        got = chosenspec.read(hlo, mesh, 2)
        assert got.spec is None and got.text == hlo and got.axes == ()
    assert chosenspec.read("not a sharding", mesh, 2).text == "not a sharding"


def test_axes_names_the_split_axes(mesh):
    assert chosenspec.read("{devices=[4,2]<=[8]}", mesh, 2).axes == ("data", "model")
