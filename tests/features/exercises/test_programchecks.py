"""The checks judged from what JAX compiles or places, each on its own: your own f's compiled
collectives, and a PartitionSpec's block read from JAX's NamedSharding."""

import pytest

from pmapviz.core.expressions import expr
from pmapviz.features.exercises import programchecks
from pmapviz.features.meshes import meshspecs
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def _g(body: str):
    return {"body": expr.program("g", body)}


@pytest.mark.parametrize("body", ["lax.pmean(g, 'i')", "lax.psum(g, 'i') / 8"])
def test_replicas_agree_through_one_all_reduce(body):
    assert programchecks.replicas_agree(_g(body), N).solved


@pytest.mark.parametrize(
    "body, found",
    [
        ("g / 8", "no collective"),
        ("lax.all_gather(g, 'i')", "all-gather"),
        ("lax.psum(lax.psum(g, 'i'), 'i')", "all-reduce"),
    ],
)
def test_replicas_agree_names_what_xla_compiled_instead(body, found):
    judged = programchecks.replicas_agree(_g(body), N)
    assert (
        not judged.solved
        and judged.kind == f"WrongResult (compiles to {found}, not one all-reduce)"
    )


def test_compiled_kinds_are_read_from_the_hlo():
    from pmapviz.core.planning import planning

    program = expr.program("g", "lax.all_gather(g, 'i') + lax.psum(g, 'i')")
    p = planning.plan(program, [(N, 3)], axis_name="i", n_devices=N)
    assert sorted(programchecks.compiled_kinds(program, p)) == ["all-gather", "all-reduce"]


def _spec(text: str):
    return {"spec": meshspecs.parse_spec(text)}


def test_block_spec_wants_the_blocks_of_the_task():
    assert programchecks.block_target(N) == ((4, 2 * N), (4, 2))
    assert programchecks.block_spec(_spec("P(None, 'i')"), N).solved
    whole = programchecks.block_spec(_spec("P()"), N)
    assert whole.kind == "WrongResult (each block must be (4, 2))" and "(4, 16)" in whole.words


@pytest.mark.parametrize(
    "text, kind",
    [
        ("P('i', 'i')", "DuplicateSpecError (one mesh axis splits two dimensions)"),
        ("P('j')", "ValueError (an axis the mesh does not have)"),
        ("P('i')", "IndivisibleError (the devices do not divide a dimension)"),
        ("P(None, None, 'i')", "IndexError (more entries than x has dimensions)"),
    ],
)
def test_block_spec_refusals_are_jaxs_own_with_the_rule(text, kind):
    judged = programchecks.block_spec(_spec(text), N)
    assert judged.kind == kind and judged.said.split(":")[0].endswith(kind.split(" ")[0])
