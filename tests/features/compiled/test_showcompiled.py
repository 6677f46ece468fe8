"""pmapviz.features.compiled.showcompiled: what XLA made of a user's f, checked against JAX's own
compilation of
the same program (its HLO, memory_analysis and cost_analysis)."""

import html

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from pmapviz.core.xla import hlo
from pmapviz.features.compiled import showcompiled
from tests.conftest import TEST_DEVICES

MEMORY_FIELDS = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
    "generated_code_bytes": "generated_code_size_in_bytes",
    "alias_bytes": "alias_size_in_bytes",
}


def _psum(x):
    return jax.lax.psum(x, "i")


@pytest.fixture(scope="module")
def psum_view():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    reference = jax.pmap(_psum, axis_name="i").lower(x).compile()
    return showcompiled.compiled(_psum, x), reference


def test_a_psum_lists_the_all_reduce_jax_emits(psum_view):
    view, reference = psum_view
    text = reference.as_text()
    assert "all-reduce" in text
    parsed = hlo.parse_hlo(text).collectives
    assert [r["collective"] for r in view.data["rows"]] == [c.kind for c in parsed]
    assert [c["replica_groups"] for c in view.data["collectives"]] == [
        [list(g) for g in c.replica_groups] for c in parsed
    ]
    assert [r["bytes per device"] for r in view.data["rows"]] == [c.bytes for c in parsed]
    assert view.data["devices"] == 4 and view.data["rows"][0]["operand"] == "f32[3]"


def test_memory_and_cost_are_the_compiled_programs_own(psum_view):
    view, reference = psum_view
    stats = reference.memory_analysis()
    for mine, theirs in MEMORY_FIELDS.items():
        assert view.data["memory"][mine] == getattr(stats, theirs), mine
    cost = reference.cost_analysis()
    cost = cost[0] if isinstance(cost, list | tuple) else cost
    assert view.data["cost"]["flops"] == cost.get("flops")
    assert view.data["cost"]["bytes_accessed"] == cost.get("bytes accessed")


def test_html_is_self_contained_and_escapes_the_hlo(psum_view):
    view, _ = psum_view
    page = view.html()
    assert "<script" not in page.lower() and "http" not in page
    assert "role='img'" in page and "<details" in page
    hlo_text = view.data["hlo"]
    line = next(ln for ln in hlo_text.splitlines() if "->" in ln)
    assert html.escape(line, quote=True) in page and line not in page
    assert "_psum" in page


def test_text_names_the_collectives_and_the_memory(psum_view):
    view, reference = psum_view
    text = str(view)
    assert "<" not in text.replace("<lambda>", "")  # text, not HTML
    assert "all-reduce" in text and "memory per device" in text
    arg = reference.memory_analysis().argument_size_in_bytes
    assert f"arguments: {arg} bytes" in text


def test_a_lambda_name_and_its_source_line_are_escaped():
    view = showcompiled.compiled(lambda x: jax.lax.psum(x, "i"), np.ones((2, 3), np.float32))
    page = view.html()
    assert "&lt;lambda&gt;" in page and "<lambda>" not in page


def test_a_jitted_function_over_a_named_sharding_is_lowered_as_it_is():
    mesh = Mesh(np.array(jax.devices()[:TEST_DEVICES]), ("d",))
    y = jax.device_put(jnp.ones((TEST_DEVICES, 4)), NamedSharding(mesh, PartitionSpec("d")))
    total = jax.jit(lambda y: y.sum())
    view = showcompiled.compiled(total, y)
    reference = total.lower(y).compile()
    assert view.data["devices"] == TEST_DEVICES
    kinds = [c.kind for c in hlo.parse_hlo(reference.as_text()).collectives]
    assert [r["collective"] for r in view.data["rows"]] == kinds and "all-reduce" in kinds
    stats = reference.memory_analysis()
    for mine, theirs in MEMORY_FIELDS.items():
        assert view.data["memory"][mine] == getattr(stats, theirs), mine


def test_shape_dtype_structs_compile_without_data():
    struct = jax.ShapeDtypeStruct((TEST_DEVICES, 2), jnp.float32)
    view = showcompiled.compiled(_psum, struct)
    reference = jax.pmap(_psum, axis_name="i").lower(struct).compile()
    assert view.data["devices"] == TEST_DEVICES
    assert (
        view.data["memory"]["argument_bytes"] == reference.memory_analysis().argument_size_in_bytes
    )
    sharded = jax.ShapeDtypeStruct(
        (TEST_DEVICES, 2),
        jnp.float32,
        sharding=NamedSharding(
            Mesh(np.array(jax.devices()[:TEST_DEVICES]), ("d",)), PartitionSpec("d")
        ),
    )
    jitted = showcompiled.compiled(jax.jit(lambda a: a * 2), sharded)
    assert jitted.data["rows"] == [] and "no collective" in jitted.html()


def test_a_broadcast_argument_and_the_device_check():
    x, w = np.ones((4, 3), np.float32), np.ones((3, 2), np.float32)
    view = showcompiled.compiled(lambda x, w: x @ w, x, w, in_axes=(0, None), devices=4)
    reference = jax.pmap(lambda x, w: x @ w, in_axes=(0, None)).lower(x, w).compile()
    assert (
        view.data["memory"]["argument_bytes"] == reference.memory_analysis().argument_size_in_bytes
    )
    with pytest.raises(ValueError, match="devices=2"):
        showcompiled.compiled(lambda x, w: x @ w, x, w, in_axes=(0, None), devices=2)


def test_long_hlo_is_cut_with_a_note_and_kept_whole_in_data():
    view = showcompiled.compiled(_psum, np.ones((4, 3), np.float32), max_hlo_chars=50)
    whole = view.data["hlo"]
    assert whole.startswith("HloModule") and "all-reduce" in whole
    page = view.html()
    assert f"Showing the first 50 of {len(whole):,} characters" in page
    assert html.escape(whole[:50], quote=True) in page and "all-reduce(" not in page


def test_variants_table_the_four_ways():
    view = showcompiled.compiled(_psum, np.ones((2, 3), np.float32), variants=True)
    assert len(view.data["variants"]) == 4 and "four ways" in view.html()


@pytest.mark.parametrize(
    ("args", "kwargs", "words"),
    [
        ((np.ones((4, 3)), np.ones((3, 3))), {}, "mapped axes differ"),
        ((np.ones((TEST_DEVICES + 1, 3)),), {}, f"PMAPVIZ_DEVICES={TEST_DEVICES + 1}"),
        ((np.ones(3),), {"in_axes": None}, "no argument is split"),
        ((np.ones(3),), {"in_axes": (0, 0)}, "one int or None"),
        ((np.ones(3),), {"in_axes": 1}, "no axis 1"),
        ((), {}, "no arguments"),
    ],
)
def test_bad_input_is_a_value_error_with_a_fix_before_jax(args, kwargs, words):
    with pytest.raises(ValueError, match=words) as err:
        showcompiled.compiled(_psum, *args, **kwargs)
    assert "Fix" in str(err.value) or words == "no arguments"
    assert err.value.__cause__ is None  # our check, not a JAX traceback


def test_a_program_jax_refuses_is_one_line_with_jax_reason():
    with pytest.raises(ValueError, match="unbound axis name") as err:
        showcompiled.compiled(lambda x: jax.lax.psum(x, "j"), np.ones((2, 2), np.float32))
    assert "Fix" in str(err.value) and err.value.__cause__ is not None
