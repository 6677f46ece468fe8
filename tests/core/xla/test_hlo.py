"""Reading collectives out of HLO text: captured fixtures (stable text), every replica-group
syntax, unreadable lines reported as unparsed, and a property test on real compilations."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmapviz.core.running import programanalysis
from pmapviz.core.xla import hlo
from pmapviz.features.collectives import collectiveanalysis
from tests.conftest import TEST_DEVICES

FIXTURES = Path(__file__).parents[1] / "fixtures"


def fixture(name: str) -> hlo.ParseReport:
    return hlo.parse_hlo((FIXTURES / name).read_text())


def test_explicit_groups_from_a_fixture():
    r = fixture("psum_groups_8.hlo")
    (c,) = r.collectives
    assert (c.kind, c.shapes, c.dtype, c.bytes) == ("all-reduce", ((8,),), "f32", 32)
    assert c.replica_groups == ((0, 1, 2, 3), (4, 5, 6, 7)) and not r.unparsed
    assert (
        c.source_line.startswith("pmapviz/core/expressions/collectivedefs.py:")
        or "collectives.py:" in c.source_line
    )
    assert r.n_devices == 8 and r.lines == (c.line,)


def test_pairs_from_a_fixture():
    (c,) = fixture("ppermute_ring_4.hlo").collectives
    assert c.kind == "collective-permute" and c.source_target_pairs == (
        (0, 1),
        (1, 2),
        (2, 3),
        (3, 0),
    )
    assert c.replica_groups is None and c.bytes == 8


def test_all_to_all_tuple_from_a_fixture():
    (c,) = fixture("all_to_all_8.hlo").collectives
    assert c.shapes == ((1,),) * 8 and c.bytes == 32 and c.shape_text == "8 x f32[1]"


def test_mesh_and_iota_syntaxes_from_a_fixture():
    gather, reduce = fixture("jit_matmul_mesh_2x4.hlo").collectives
    assert gather.kind == "all-gather" and gather.replica_groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert reduce.replica_groups == ((0, 4), (1, 5), (2, 6), (3, 7))  # [4,2]<=[2,4]T(1,0)


@pytest.mark.parametrize(
    "axes, chosen, groups",
    [
        ("'axis_0'=8,'axis_1'=1", "'axis_0'", [tuple(range(8))]),
        ("'a'=2,'b'=4", "'a'", [(0, 4), (1, 5), (2, 6), (3, 7)]),
        ("'a'=2,'b'=4", "'b'", [(0, 1, 2, 3), (4, 5, 6, 7)]),
        ("'a'=2,'b'=4", "'a','b'", [tuple(range(8))]),
        ("'a'=2,'b'=4", "'b','a'", [(0, 4, 1, 5, 2, 6, 3, 7)]),
    ],
)
def test_mesh_groups(axes, chosen, groups):
    assert hlo.mesh_groups(axes, chosen) == groups


def test_iota_groups():
    assert hlo.iota_groups((2, 4), (8,), ()) == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert hlo.iota_groups((4, 2), (2, 4), (1, 0)) == [(0, 4), (1, 5), (2, 6), (3, 7)]


HEADER = "HloModule m, num_partitions=4\n\n"


@pytest.mark.parametrize(
    "line, why",
    [
        ("%x = f32[4]{0} all-reduce(%p), replica_groups=mesh['a':(1)2] {'a'}", "mesh"),
        ("%x = f32[4]{0} all-reduce(%p), replica_groups={{0,1},{1,2}}", "repeat"),
        ("%x = f32[4]{0} all-reduce(%p), replica_groups={{0,9}}", "past the device count"),
        ("%x = f32[4]{0} all-reduce(%p), replica_groups=<weird>", "does not read"),
        ("%x = f32[4]{0} all-gather(%nowhere), replica_groups={}", "shape of operand"),
        ("%x = q9[4]{0} collective-permute(q9[4] %p), source_target_pairs={{0,1}}", "element type"),
        (
            "%x = f32[4]{0} collective-permute(%p), source_target_pairs=[0->1]",
            "source_target_pairs",
        ),
        ("garbage all-reduce(", "layout"),
    ],
)
def test_unreadable_lines_are_reported_as_unparsed(line, why):
    r = hlo.parse_hlo(HEADER + "  %p = f32[4]{0} parameter(0)\n  " + line + "\n")
    assert not r.collectives
    assert len(r.unparsed) == 1 and why in r.unparsed[0][2] and r.unparsed[0][0] == 4


def test_empty_groups_mean_every_device_and_other_ops_are_ignored():
    text = (
        HEADER + "  %p = f32[4]{0} parameter(0)\n"
        "  %x = f32[4]{0} all-reduce(%p), replica_groups={}, to_apply=%add\n"
        "  %g = f32[4]{0} get-tuple-element(%all-to-all), index=0\n"
        "  %d = f32[4]{0} all-reduce-done(%x)\n"
    )
    r = hlo.parse_hlo(text)
    assert [c.replica_groups for c in r.collectives] == [((0, 1, 2, 3),)] and not r.unparsed


def test_old_style_source_metadata():
    text = (
        HEADER + "  %x = f32[] all-reduce(f32[] %p), replica_groups={{0,1,2,3}}, "
        'metadata={op_name="psum" source_file="/x/y.py" source_line=12}\n'
    )
    (c,) = hlo.parse_hlo(text).collectives
    assert c.source_line == "/x/y.py:12" and c.op_name == "psum" and c.bytes == 4


def _partitions(draw_perm, sizes):
    flat = list(draw_perm)
    out, k = [], 0
    for s in sizes:
        out.append(flat[k : k + s])
        k += s
    return out


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.sampled_from([1, 2, 4]),
    order=st.permutations(range(TEST_DEVICES)),
    key=st.sampled_from(["psum", "pmax"]),
)
def test_parsed_groups_equal_what_was_asked(size, order, key):
    groups = _partitions(order, [size] * (TEST_DEVICES // size))
    (c,) = programanalysis.analyse(
        collectiveanalysis.collective_target(key, TEST_DEVICES, 2, groups), False
    ).rows
    assert [list(g) for g in c.hlo.replica_groups] == groups


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(order=st.permutations(range(TEST_DEVICES)), keep=st.integers(1, TEST_DEVICES))
def test_parsed_pairs_equal_what_was_asked(order, keep):
    pairs = [(s, d) for s, d in enumerate(order)][:keep]
    target = collectiveanalysis.collective_target("ppermute", TEST_DEVICES, 1, perm=pairs)
    (c,) = programanalysis.analyse(target, variants=False).rows
    assert sorted(c.hlo.source_target_pairs) == sorted(pairs)


def test_sort_compares_counts_n_log_n_per_sorted_row():
    """A sort's compares, read from a lowered program's text (XLA's cost analysis books them
    as FLOPs; the time estimate charges them at the measured sort rate)."""
    import math

    import jax
    import jax.numpy as jnp

    f = jax.jit(jax.vmap(lambda x: jnp.sort(jnp.einsum("a,b->ab", x, x))))
    text = f.lower(jax.ShapeDtypeStruct((4, 50), jnp.float32)).as_text()
    assert hlo.sort_compares(text) == pytest.approx(4 * 50 * 50 * math.log2(50))
    assert hlo.sort_compares(f.lower(jnp.ones((4, 1))).as_text()) == 0  # length 1


def test_mesh_groups_with_device_ids_are_the_mesh_axis_groups_jax_means():
    """2-D Explicit meshes' einsums print ``mesh[...], device_ids=([2,4]T(1,0)) {...}``: the
    device at each mesh position. A sum over 'm' of jax.make_mesh((2, 4), ('d', 'm')) groups
    the devices that share a 'd' coordinate: the mesh's rows."""
    line = (
        "  %ar = f32[64,16]{1,0} all-reduce(f32[64,16]{1,0} %p), channel_id=2, "
        "replica_groups=mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) "
        "{'axis_1'}, use_global_device_ids=true, to_apply=%add\n"
    )
    (c,) = hlo.parse_hlo(HEADER.replace("4", "8") + line).collectives
    assert c.replica_groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert hlo.mesh_device_ids((2, 4), (1, 0)) == [0, 4, 1, 5, 2, 6, 3, 7]


def test_the_einsum_that_prints_device_ids_reads_as_its_mesh_rows():
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2, 4), ("d", "m"), devices=jax.devices()[:8])
    with jax.set_mesh(mesh):
        a = jax.reshard(np.ones((64, 32), np.float32), P("d", "m"))
        b = jax.reshard(np.ones((16, 32), np.float32), P(None, "m"))
        f = jax.jit(lambda a, b: jnp.einsum("ij,kj->ik", a, b, out_sharding=P(None, "m")))
        text = f.lower(a, b).compile().as_text()
    parsed, lines = hlo.parse_hlo(text), text.splitlines()
    rows = tuple(tuple(int(d.id) for d in row) for row in mesh.devices)  # along 'm'
    columns = tuple(tuple(int(d.id) for d in col) for col in mesh.devices.T)  # along 'd'
    printed = [c for c in parsed.collectives if "device_ids=(" in lines[c.line - 1]]
    assert not parsed.unparsed and printed  # the syntax is there, and every line is read
    # each communicates along one of the mesh's axes: its groups are the mesh's rows or columns
    assert all(c.replica_groups in (rows, columns) for c in printed), [
        (c.replica_groups, lines[c.line - 1]) for c in printed
    ]
