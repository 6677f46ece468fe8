"""The pictures: a pipeline as a row of boxes (each stage's primitive, parameters and types as
JAX printed them, every text escaped), and smap's blocks beside pmap's slices per device."""

from __future__ import annotations

import html

from pmapviz.core.expressions import functions
from pmapviz.core.planning.planning import plan
from pmapviz.core.running.jaxsays import JaxSaid
from pmapviz.features.smap import smaphtml, smaprun
from pmapviz.features.smap.pmappipeline import Equation, Pipeline, Stage, pmap_pipeline
from pmapviz.features.smap.smapsettings import SmapSettings
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_a_pipeline_is_a_row_of_boxes_in_jaxs_order_with_its_types():
    program = functions.get("normalise")
    pipe = pmap_pipeline(program, plan(program, [(N, 4)], axis_name="i", n_devices=N))
    label = smaphtml.pipeline_label(pipe)
    assert label.endswith("jit then shard_map then squeeze then f then broadcast_in_dim")
    body = smaphtml.pipeline_html(pipe, label)
    order = [body.index(f">{p}<") for p in ("jit", "shard_map", "squeeze", "f")]
    assert order == sorted(order) and body.count("&rarr;</div>") == len(pipe.stages) - 1
    assert html.escape("in_specs=(P('i',),)", quote=True) in body  # JAX's own text, escaped
    assert "f32[1,4] &rarr; f32[4]" in body and "<b>psum</b>" in body
    assert f"role='img' aria-label='{html.escape(label, quote=True)}'" in body


def test_every_text_is_escaped_and_a_refusal_is_drawn_as_jaxs_words():
    evil = Equation("<script>", (("k", "<b>v</b>"),), ("f32[<i>]",), ("x",), ("<img>",))
    body = smaphtml.pipeline_html(Pipeline("pmap", (Stage("squeeze", (evil,)),)), "<label>")
    assert "<script>" not in body and "<b>v" not in body and "<img>" not in body
    assert "&lt;script&gt;" in body and "&lt;label&gt;" in body
    refused = Pipeline("smap", refused=JaxSaid("ValueError", "bad <shape>"))
    assert "ValueError: bad &lt;shape&gt;" in smaphtml.pipeline_html(refused, "x")


def test_long_f_shows_its_first_equations_and_says_how_many_more():
    eqs = tuple(Equation("add", (), ("f32[]",), ("f32[]",)) for _ in range(smaphtml.F_SHOWN + 3))
    body = smaphtml.stage_html(Stage("f", eqs))
    assert body.count("<b>add</b>") == smaphtml.F_SHOWN and "... 3 more" in body
    assert "f returns its input" in smaphtml.stage_html(Stage("f", ()))


def test_blocks_beside_slices_one_column_per_device():
    program = functions.get("double")
    p = plan(program, [(N, 3)], n_devices=N)
    run = smaprun.run_here(program, p, SmapSettings())
    body = smaphtml.blocks_html(run)
    assert body.count("x &middot; pmap") == 1 and body.count("out &middot; smap") == 1
    assert body.count(f"<b>[{N - 1}:{N}, :]</b>") == 4  # x and out, pmap's and smap's
    assert "beside the slice pmap gives it" in body
    twice = plan(program, [(2 * N, 3)], n_devices=N)  # pmap refuses: smap's rows alone
    only = smaphtml.blocks_html(smaprun.run_here(program, twice, SmapSettings()))
    assert "&middot; pmap" not in only and "<b>[0:2, :]</b>" in only
