"""AppTest for the Types page: the typed program's grid from JAX's own types, one mode compiled
by default and the others when opened, links that carry a program, bad input with one line."""

import html
import re

from pmapviz.core.base.pageinfo import page_file
from pmapviz.features.types import typedcatalog, typedprogram
from tests.conftest import TEST_DEVICES
from tests.pages.conftest import all_text

PAGE = page_file("types")


def _grid(at) -> str:
    found = [h.proto.body for h in at.get("html") if "role='img'" in h.proto.body]
    assert len(found) == 1, len(found)
    return found[0]


def _cells(text: str) -> str:
    """The grid's text without its tags (what a reader sees)."""
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def test_the_default_opens_explicit_only_with_jax_s_types(run_app):
    typedprogram.forget()
    at = run_app(page=PAGE)
    assert not at.exception, [e.value for e in at.exception]
    grid = _grid(at)
    # the Meshes page's default f, x @ w on 2 x 4 with x P('data', None), w P(None, 'model')
    expected = typedprogram.typed(typedcatalog.named("meshes", TEST_DEVICES), "explicit")
    seen = _cells(grid)
    for row in expected.rows:
        for t in row.eqn.out_types:
            assert t in seen
    assert "f32[8@data,16@model]" in seen  # dot_general's type, as JAX prints it
    assert "not compiled yet" in seen  # Auto and Manual stay closed
    assert at.query_params["mode"] == "explicit" and at.query_params["prog"] == "meshes"
    assert "aria-label='The typed program of f(x, w) = x @ w" in grid


def test_opening_another_mode_compiles_it_and_auto_says_its_types_carry_none(run_app):
    at = run_app(page=PAGE)
    at.multiselect(key="ty_mode").set_value(["auto", "explicit", "manual"]).run()
    assert not at.exception
    seen = _cells(_grid(at))
    assert "not compiled yet" not in seen
    assert "f32[8,16]" in seen and "XLA chose P('data', 'model')" in seen  # Auto: the choice
    assert "{V:data}" in seen and "all-gather" in seen  # Manual: per-device, its collective
    assert "Auto's types carry no sharding" in all_text(at)
    assert at.query_params["mode"] == "auto,explicit,manual"


def test_a_link_opens_the_training_step_and_the_seed(run_app):
    at = run_app(page=PAGE, query={"prog": "training", "mode": "manual", "model": "mlp"})
    assert not at.exception
    seen = _cells(_grid(at))
    assert "psum" in seen or "pmean" in seen or "all-reduce" in seen
    assert "{V:batch}" in seen
    at = run_app(page=PAGE, query={"prog": "seed", "mode": "explicit"})
    assert not at.exception
    pairs = 10_000_000 // TEST_DEVICES
    assert f"f32[{TEST_DEVICES}@i,{pairs},3]" in _cells(_grid(at))


def test_an_explorer_link_opens_its_function(run_app):
    at = run_app(
        page=PAGE,
        query={"prog": "explorer", "fn": "normalise", "name": "i", "s0": f"{TEST_DEVICES}, 4"},
    )
    assert not at.exception
    at.multiselect(key="ty_mode").set_value(["auto", "manual"]).run()
    seen = _cells(_grid(at))
    assert "psum_invariant" in seen and "all-reduce" in seen  # Manual's psum over i
    assert f"f32[{TEST_DEVICES},4]" in seen  # Auto's input: no sharding in the type


def test_bad_input_gets_one_line_and_the_defaults(run_app):
    at = run_app(
        page=PAGE,
        query={
            "mesh": "9" * 30,
            "names": "<b>x</b>,y",
            "p0": "P(" * 64,
            "ms0": str(10**30),
            "mode": "auto,<img src=x>",
            "prog": "nope",
        },
    )
    assert not at.exception
    # the link's notes (the conflicts section's lesson, a warning of its own, aside)
    notes = [w.value for w in at.warning if not w.value.startswith("**JAX refuses")]
    assert len(notes) >= 5  # one per bad value: mesh (and names, joint), p0, ms0, mode, prog
    assert "f32[8@data,16@model]" in _cells(_grid(at))  # the defaults, drawn
    assert all("Using the default" in n for n in notes)
    assert any("`<b>x</b>`" in n for n in notes)  # markup from a link is shown as code
    at.text_input(key="ty_p0").set_value("P('data'").run()
    assert not at.exception
    assert [e.value for e in at.error] == ["spec 1 `P('data'`: write it like P('data', None)."]


def test_a_mesh_bigger_than_the_server_is_refused_with_a_fix(run_app):
    at = run_app(page=PAGE, query={"mesh": f"2x{TEST_DEVICES}", "ms0": "4, 32", "p0": "data, None"})
    assert not at.exception
    assert any("Fix: make the mesh" in e.value for e in at.error)
    assert not [h for h in at.get("html") if "role='img'" in h.proto.body]


def test_the_conflicts_section_keeps_its_link_beside_the_typed_program(run_app):
    at = run_app(page=PAGE, query={"c_dt": "bfloat16", "mode": "manual"})
    assert not at.exception
    assert "Sharding conflicts, played" in [h.value for h in at.subheader]
    assert at.query_params["c_dt"] == "bfloat16" and at.query_params["mode"] == "manual"
    at.multiselect(key="ty_mode").set_value(["auto"]).run()
    assert at.query_params["c_dt"] == "bfloat16" and at.query_params["mode"] == "auto"


def test_your_own_f_from_an_explorer_link_and_its_bad_text(run_app):
    query = {"prog": "explorer", "fn": "expr", "args": "x, w", "body": "jnp.tanh(x @ w)"}
    query |= {"s0": f"{TEST_DEVICES}, 4, 5", "a0": "0", "s1": "5, 2", "a1": "None"}
    at = run_app(page=PAGE, query=query)
    assert not at.exception
    seen = _cells(_grid(at))
    assert f"f32[{TEST_DEVICES}@i,4,2]" in seen and "your expression" in seen
    at.text_input(key="ty_body").set_value("(" * 64 + "x").run()
    assert not at.exception and len(at.error) == 1  # one line: the expression's column
    assert "column" in at.error[0].value
