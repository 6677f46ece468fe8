"""AppTest for the Shapes & sharding explorer: verdicts, every message, fixes, URL state."""

import html
import re
from dataclasses import dataclass

import pytest

from pmapviz.core.base.pageinfo import page_file
from pmapviz.features.explorer import presets
from pmapviz.features.explorer.ui import plan_verdict
from tests.conftest import TEST_DEVICES
from tests.pages.conftest import all_text, html_table

PAGE = page_file("explorer")
N = TEST_DEVICES


def explorer(run_app, **query):
    at = run_app(page=PAGE, query={k: str(v) for k, v in query.items()})
    assert not at.exception, [e.value for e in at.exception]
    return at


def widget(at, key):
    return next(w for w in [*at.text_input, *at.selectbox] if w.key == key)


@dataclass
class Diagram:
    label: str
    body: str


def diagrams(at) -> list[Diagram]:
    """The array diagrams on the page (drawn by ``arrayhtml.array_html``, every card in one
    ``st.html`` block), each with its own HTML."""
    out = []
    for h in at.get("html"):
        starts = [m.start() for m in re.finditer('<div role="img"', h.proto.body)]
        for a, b in zip(starts, [*starts[1:], None][: len(starts)], strict=True):
            body = h.proto.body[a:b]
            label = re.match(r'<div role="img" aria-label="([^"]*)"', body).group(1)
            out.append(Diagram(html.unescape(label), body))
    return out


TABLE = "What each device holds and computes"


def table(at) -> list[dict[str, str]]:
    return html_table(at, TABLE)


def open_code(at, tab: str | None = None):
    """Open the (lazy) code section, and a tab of it."""
    at.session_state["ex_code_open"] = True
    if tab:
        at.session_state["ex_code"] = tab
    return at.run()


def test_default_is_the_seed_dot_product(run_app):
    at = explorer(run_app)
    assert "Valid" in at.success[0].value and f"{N} of the {N} devices" in at.success[0].value
    assert f"**({N}, 1_250_000)** float32" in at.success[0].value
    assert [d.label for d in diagrams(at)][:1] == [
        f"x (8, 1_250_000, 3) split over {N} devices along axis 0"
    ]
    assert len(diagrams(at)) == 3  # x, y and out
    rows = table(at)
    assert [r["device"] for r in rows] == [f"cpu:{k}" for k in range(N)]
    assert [r["x slice"] for r in rows] == [f"[{k}:{k + 1}, :, :]" for k in range(N)]
    assert [r["out slice"] for r in rows] == [f"[{k}:{k + 1}, :]" for k in range(N)]
    assert {r["f receives"] for r in rows} == {"(1_250_000, 3), (1_250_000, 3)"}
    codes = [c.value for c in at.code]
    assert "jax.pmap(f, in_axes=(0, 0), out_axes=0, axis_name=None)" in codes  # the call
    assert not any("def f(" in c for c in codes)  # the code section is closed: not drawn
    codes = [c.value for c in open_code(at).code]
    assert any("jax.pmap(f, in_axes=(0, 0)" in c and "def f(" in c for c in codes)
    assert not any("jax.shard_map(" in c for c in codes)  # it lives in Open as shard_map
    codes = [c.value for c in open_code(at, "What XLA compiles").code]
    assert not any("def f(" in c for c in codes)  # lazy tabs: only the open one is drawn
    assert at.query_params["fn"] == "batched_dot"
    assert at.query_params["s0"] == f"{N}, 1_250_000, 3"


def test_forgotten_reshape_is_explained_and_fixed_by_the_button(run_app):
    at = explorer(run_app, fn="batched_dot", s0="10000000, 3", s1="10000000, 3")
    err = at.error[0].value
    assert f"Axis 0 of x has 10,000,000 elements but there are {N} devices" in err
    assert f"to ({N}, {10_000_000 // N:_}, 3)" in all_text(at)
    button = next(b for b in at.button if b.key == "fix_mapped_axis_too_large")
    button.click().run()
    assert not at.exception and not at.error
    assert widget(at, "ex_s0").value == f"{N}, {10_000_000 // N:_}, 3"
    assert "Valid" in at.success[0].value


def _jax_expanders(at):
    return [e for e in at.expander if e.label.startswith("What JAX itself says")]


def test_jaxs_own_error_follows_the_explanation_collapsed_and_verbatim(run_app):
    """Ten rows on eight devices: pmapviz's message and fix first, then JAX's own exception,
    the very one the real call raises, in a collapsed code block (never markdown)."""
    import jax
    import numpy as np

    from pmapviz.core.running import jaxsays

    at = explorer(run_app, fn="double", s0="10, 3")
    (box,) = _jax_expanders(at)
    assert box.label == "What JAX itself says: IndivisibleError"
    assert not box.proto.expanded  # collapsed: the plain explanation comes first
    try:
        jax.pmap(lambda x: x * 2, devices=jax.devices()[:N])(np.zeros((10, 3), np.float32))
        raise AssertionError("the real call ran")
    except Exception as err:  # noqa: BLE001 -- what JAX says is what the page must show
        real = jaxsays.said(err)
    (code,) = box.code
    assert code.value == real.text and "partitioned 8 times" in code.value
    order = _in_order(at.main)  # on the page: the explanation, its fix, then JAX's words
    first = [order.index(x) for x in ("error", "Fix:", "What JAX itself says", real.text)]
    assert first == sorted(first), order


def _in_order(node) -> list[str]:
    """The page top to bottom, as kinds of element and words: an error box as "error", a
    markdown's or code block's text, an expander's label."""
    out = []
    for child in getattr(node, "children", {}).values():
        if child.type == "expander":
            out.append(child.label.partition(":")[0])
        elif child.type == "error":
            out.append("error")
        elif child.type in ("markdown", "code"):
            out.append("Fix:" if child.value.startswith("**Fix:**") else child.value)
        out += _in_order(child)
    return out


def test_jaxs_words_when_it_raises_nothing_and_when_it_cannot_be_asked(run_app):
    at = explorer(run_app, fn="double", s0="8, 3", out="-1")  # JAX misshapes it silently
    (box,) = _jax_expanders(at)
    assert box.label == "What JAX itself says: no error" and "raises no error" in all_text(at)
    at = explorer(run_app, fn="double", s0="4097, 3", pn="4096")  # elsewhere: no devices here
    assert not _jax_expanders(at) and at.error
    assert any(f"this server has {N}, so JAX cannot be asked" in c.value for c in at.caption)


@pytest.mark.parametrize(
    "query, words",
    [
        (dict(fn="add", s0="8, 3", s1="4, 3"), "x axis 0 has 8, y axis 0 has 4"),
        (dict(fn="double", s0="8, 3", a0="2"), "valid axes are 0 to 1"),
        (dict(fn="add", s0="8, 3", s1="8, 3", a0="None", a1="None"), "in_axes=None"),
        (dict(fn="double", s0="0, 3"), "size 0"),
        (dict(fn="double", s0="8, 3", out="None"), "silently returns device 0"),
        (dict(fn="normalise", s0="8, 3", name=""), "axis_name is empty"),
        (dict(fn="double", s0="8, 3", out="-1"), "negative"),
        (dict(fn="matmul", s0="8, 4, 5", s1="6, 2", a1="None"), "cannot take that"),
    ],
)
def test_each_mistake_gets_a_message_and_a_fix(run_app, query, words):
    at = explorer(run_app, **query)
    assert at.error, all_text(at)
    assert words in at.error[0].value
    assert "**Fix:**" in all_text(at)
    assert not at.success and not diagrams(at)


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("s0", "8,,3", "empty size"),
        ("s0", "1e309", "not a size"),
        ("a0", "zero", "not an axis"),
        ("out", "nan", "not an axis"),
        ("name", "a b", "not a simple name"),
        ("s0", "", "empty"),
        ("s0", ", ".join(["2"] * 40), "40 axes"),
        ("s0", "ünï", "not a size"),
    ],
)
def test_bad_text_is_a_message_not_a_traceback(run_app, field, value, words):
    at = explorer(run_app)
    widget(at, "ex_" + field).set_value(value).run()
    assert not at.exception
    assert any(words in e.value for e in at.error), [e.value for e in at.error]


def test_fewer_elements_than_devices_says_how_many_are_used(run_app):
    at = explorer(run_app, fn="double", s0="3, 5")
    assert "uses **3 of the" in at.success[0].value
    assert any("first 3 of the" in i.value for i in at.info)
    assert len(table(at)) == 3


def test_out_axes_none_is_accepted_when_every_device_agrees(run_app):
    at = explorer(run_app, fn="global_sum", s0="8, 3", out="None", name="i")
    assert "Valid" in at.success[0].value and "**()**" in at.success[0].value
    assert any("out_axes=None is safe here" in i.value for i in at.info)


def test_changing_the_function_loads_its_example(run_app):
    at = explorer(run_app)
    widget(at, "ex_fn").set_value("matmul").run()
    assert not at.exception
    assert widget(at, "ex_s1").value == "5, 2" and widget(at, "ex_a1").value == "None"
    assert "Valid" in at.success[0].value
    assert at.query_params["fn"] == "matmul" and at.query_params["a1"] == "None"


# The verdict each preset must get, derived by hand from pmap's rules (not from the planner):
# an error's words, or the result shape and dtype the success box must name.
PRESET_VERDICTS = {
    "seed_noreshape": ("error", "10,000,000 elements but there are 8 devices"),
    "seed": ("success", f"**({N}, 1_250_000)** float32"),
    "broadcast": ("success", f"**({N}, 4, 2)** float32"),
    "axis1": ("success", f"**(3, {N})** float32"),
    "outnone": ("error", "silently returns device 0's value"),
    "psum": ("success", f"**({N}, 4)** float32"),
}


@pytest.mark.parametrize("preset", presets.PRESETS, ids=[p.key for p in presets.PRESETS])
def test_every_preset_gets_its_own_verdict(run_app, preset):
    at = explorer(run_app)
    next(b for b in at.button if b.key == f"preset_{preset.key}").click().run()
    assert not at.exception
    assert widget(at, "ex_fn").value == preset.fn
    kind, words = PRESET_VERDICTS[preset.key]
    if kind == "error":  # a mistake on purpose: drawn as the lesson, not as the page's error
        assert not at.success and not at.error
        assert any(i.value == plan_verdict.LESSON for i in at.info)
        assert any(words in w.value for w in at.warning), at.warning
    else:
        assert not at.error and words in at.success[0].value, at.success[0].value


def test_a_link_reproduces_the_view(run_app):
    query = dict(fn="add", s0="3, 8", s1="3, 8", a0="1", a1="1", out="1", d0="int32", d1="int32")
    at = explorer(run_app, **query)
    for k, v in query.items():
        assert widget(at, "ex_" + k).value == v
        assert at.query_params[k] == v
    assert "**(3, 8)** int32" in at.success[0].value


def test_a_crafted_link_is_validated_like_a_widget(run_app):
    at = explorer(run_app, fn="rm -rf /", d0="complex512", s0="x" * 500)
    assert widget(at, "ex_fn").value == "batched_dot"
    warnings = " ".join(w.value for w in at.warning)
    assert "`rm -rf /`" in warnings and "complex512" in warnings and "500 characters" in warnings


def test_negative_in_axes_are_refused_as_jax_would_and_apply_fixes_them(run_app):
    """JAX 0.10's pmap raises on (3, 8) with in_axes=-1; the explorer says so, shows the call
    as typed, and its Apply button writes the non-negative axis."""
    at = explorer(run_app, fn="double", s0=f"3, {N}", a0="-1", out="0")
    assert "in_axes=-1" in at.code[0].value  # the call as the user typed it
    assert any("does not normalise negative in_axes" in e.value for e in at.error)
    assert not at.success
    fix = next(b for b in at.button if b.key == "fix_negative_in_axes")
    assert "in_axes=1" in fix.label
    fix.click().run()
    assert widget(at, "ex_a0").value == "1"
    assert "Valid" in at.success[0].value


def test_a_negative_axis_that_means_axis_0_is_valid_and_shown_as_typed(run_app):
    at = explorer(run_app, fn="double", s0=f"{N}, 3", a0="-2", out="0")
    assert "Valid" in at.success[0].value
    assert "in_axes=-2" in at.code[0].value
    codes = [c.value for c in open_code(at).code]
    assert any("in_axes=(-2,)" in c and "def f(" in c for c in codes)  # the script keeps it


# ---------------------------------------------------------------- your own f
def test_your_own_f_starts_from_the_current_function_and_plans(run_app):
    at = explorer(run_app, fn="matmul", s0=f"{N}, 4, 5", s1="5, 2", a1="None")
    widget(at, "ex_fn").set_value("expr").run()
    assert not at.exception
    assert widget(at, "ex_args").value == "x, w" and widget(at, "ex_body").value == "x @ w"
    widget(at, "ex_body").set_value("jnp.tanh(x @ w) + 1").run()
    assert not at.exception and "Valid" in at.success[0].value
    assert f"**({N}, 4, 2)** float32" in at.success[0].value
    assert at.query_params["fn"] == "expr" and at.query_params["body"] == "jnp.tanh(x @ w) + 1"
    codes = [c.value for c in open_code(at).code]
    assert any("def f(x, w):\n    return jnp.tanh(x @ w) + 1" in c for c in codes)
    widget(at, "ex_args").set_value("x, w, b").run()  # a third argument gets its inputs
    assert widget(at, "ex_s2").label == "shape of b"


def test_a_link_with_an_expression_reproduces_the_view(run_app):
    query = dict(
        fn="expr",
        args="a, b",
        body="jnp.sum(a * b, axis=-1)",
        s0=f"{N}, 3, 2",
        s1=f"{N}, 3, 2",
        a0="0",
        a1="0",
        out="0",
        d0="float32",
        d1="float32",
    )
    at = explorer(run_app, **query)
    for k, v in query.items():
        assert widget(at, "ex_" + k).value == v
        assert at.query_params[k] == v
    assert f"**({N}, 3)** float32" in at.success[0].value


def test_a_refused_expression_names_the_column_without_a_traceback(run_app):
    at = explorer(run_app, fn="expr", args="x", body="x + 1", s0=f"{N}, 3")
    widget(at, "ex_body").set_value("x + __import__('os')").run()
    assert not at.exception and not at.success
    assert "column 5" in at.error[0].value and "`__import__`" in at.error[0].value
    assert "Traceback" not in all_text(at)
    at = explorer(run_app, fn="expr", args="x", body="open('/etc/passwd')")  # a crafted link
    assert any("column 1" in w.value and "Using the defaults" in w.value for w in at.warning)
    assert widget(at, "ex_body").value == "jnp.tanh(x @ w)"


def test_plan_for_4096_devices_draws_grouped_blocks(run_app):
    at = explorer(run_app, fn="double", s0=f"{N}, 4")
    widget(at, "ex_pn").set_value("4096").run()
    assert not at.exception
    assert widget(at, "ex_s0").value == "4_096, 4"  # the mapped axis follows the count
    assert "**4,096 of the 4,096 devices**" in at.success[0].value
    assert any("this server has 8" in i.value for i in at.info)
    assert at.query_params["pn"] == "4096" and len(diagrams(at)) == 2
    assert len(at.dataframe[0].value) == 4096
    widget(at, "ex_pn").set_value("99999").run()
    assert not at.exception and "out of range" in at.error[0].value


# ---------------------------------------------------------------- pytree arguments
PARAMS = dict(
    fn="expr",
    args="x, params",
    body="jnp.tanh(x @ params['w'] + params['b'])",
    s0=f"{N}, 4, 5",
    s1="{'w': (5, 2), 'b': (2,)}",
    out="0",
)


def test_a_dict_argument_replicated_with_none_draws_every_leaf(run_app):
    """jax-ml/jax#9933: a parameter dict replicated with in_axes None. Every leaf gets a card,
    the table a row per device, and the link reproduces the view."""
    at = explorer(run_app, **PARAMS, a0="0", a1="None")
    assert "Valid" in at.success[0].value, [e.value for e in at.error]
    assert f"**({N}, 4, 2)** float32" in at.success[0].value
    assert len(diagrams(at)) == 4  # x, params['b'], params['w'] and out
    cards = "".join(h.proto.body for h in at.get("html"))
    assert "params[&#x27;b&#x27;]" in cards and "params[&#x27;w&#x27;]" in cards
    codes = [c.value for c in open_code(at).code]
    assert any("in_axes=(0, None)" in c for c in codes)
    assert any("params = {'b': rng.standard_normal((2,))" in c for c in codes), codes[1]
    assert any("def f(x, params):" in c for c in codes)
    assert at.query_params["s1"] == PARAMS["s1"] and at.query_params["a1"] == "None"


def test_a_dict_prefix_maps_one_leaf_and_replicates_the_other(run_app):
    query = {
        **PARAMS,
        "body": "x @ params['w'] + params['b']",
        "s1": f"{{'w': (5, 2), 'b': ({N}, 2)}}",
        "a0": "0",
        "a1": "{'w': None, 'b': 0}",
    }
    at = explorer(run_app, **query)
    assert "Valid" in at.success[0].value, [e.value for e in at.error]
    assert any("in_axes=(0, {'w': None, 'b': 0})" in c.value for c in at.code)


def test_a_wrong_leaf_is_named_in_the_error(run_app):
    at = explorer(run_app, **PARAMS, a0="0", a1="0")  # maps params['b'] (2,) over 8 devices
    assert not at.success and not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "params['b']" in errors, errors
    assert "Traceback" not in all_text(at)


def test_a_prefix_that_does_not_fit_the_dict_says_both_structures(run_app):
    at = explorer(run_app, **PARAMS, a0="0", a1="{'w': None}")
    assert not at.success and not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "dict with keys `'w'`" in errors and "`'b', 'w'`" in errors, errors  # as code


@pytest.mark.parametrize(
    "s1, words",
    [
        ("{'w': (5, 2), 'b': (2,)", "the end of the text (column 24)"),
        ("{'w': (5, -2)}", "sizes are whole numbers"),
        ("(" * 30, "nest at most"),
        ("{'w': x}", "column 7"),
    ],
)
def test_bad_tree_text_in_a_link_is_a_clear_message(run_app, s1, words):
    at = explorer(run_app, **{**PARAMS, "s1": s1}, a0="0", a1="None")
    said = " ".join(m.value for m in [*at.warning, *at.error])
    assert words in said, said
    assert "Traceback" not in all_text(at)


def test_share_link_is_drawn_only_when_opened_and_names_this_view(run_app):
    """The share control is lazy: an edit draws no link until someone opens it."""
    at = explorer(run_app, fn="double", s0=f"{N}, 3")
    assert not any("/explorer" in c.value for c in at.code)
    at.session_state["share_explorer"] = True
    at.run()
    link = next(c.value for c in at.code if "/explorer?" in c.value)
    assert "fn=double" in link and f"s0={N}%2C+3" in link


def test_per_device_table_is_html_up_to_64_rows_and_a_dataframe_beyond(run_app):
    at = explorer(run_app, fn="double", s0="64, 3", pn="64")
    assert len(table(at)) == 64 and not at.dataframe
    widget(at, "ex_pn").set_value("65").run()
    assert len(at.dataframe[0].value) == 65 and not any(
        TABLE in h.proto.body for h in at.get("html")
    )


@pytest.mark.parametrize("present", ["0", "1"])
@pytest.mark.parametrize("args", ["x", "x, y", "a, b, c, d"])
def test_argument_boxes_lay_out_any_number_of_arguments(run_app, args, present):
    """Three arguments per row (one per row in presenter mode), each box naming its
    argument; a short last row keeps the columns aligned."""
    names = [a.strip() for a in args.split(",")]
    body = " + ".join(f"{a}.sum()" for a in names)
    at = explorer(
        run_app,
        fn="expr",
        args=args,
        body=body,
        present=present,
        **{f"s{k}": f"{N}, 3" for k in range(len(names))},
    )
    labels = [w.label for w in at.text_input if re.fullmatch(r"ex_[sa][0-9]", w.key or "")]
    assert labels == [lab for a in names for lab in (f"shape of {a}", f"in_axes of {a}")]
    assert "Valid" in at.success[0].value


def test_the_same_problem_for_two_arguments_gets_a_fix_button_for_each(run_app):
    """A share link with in_axes -1 for x and for y (found by the hostile-link test): two
    negative-axis problems, each with its own button; both applied give a valid plan."""
    at = explorer(run_app, fn="batched_dot", a0="-1", a1="-1")
    fixes = [b for b in at.button if b.key.startswith("fix_negative_in_axes")]
    assert [b.key for b in fixes] == ["fix_negative_in_axes", "fix_negative_in_axes_1"]
    assert [b.label for b in fixes] == ["Apply: in_axes=2 for x", "Apply: in_axes=2 for y"]
    fixes[0].click().run()
    next(b for b in at.button if b.key.startswith("fix_negative_in_axes")).click().run()
    assert not at.exception and "Valid" in at.success[0].value


def test_an_unforeseen_error_in_the_fragment_is_one_clear_message(run_app, monkeypatch):
    """app.py's last resort cannot catch what a fragment raises (Streamlit's fragment runner
    shows it first), so the explorer's fragment carries the same net (``ui.shell.fragment``)."""
    from pmapviz.features.explorer import codegen

    def broken(*args, **kwargs):
        raise RuntimeError("/secret/path")

    monkeypatch.setattr(codegen, "pmap_call", broken)
    at = explorer(run_app)
    assert any("ran into an unexpected problem" in e.value for e in at.error)
    assert "/secret/path" not in all_text(at) and "RuntimeError" in all_text(at)


def test_open_as_shard_map_carries_the_settings_to_the_meshes_page(run_app):
    query = {"fn": "matmul", "s0": f"{N}, 3, 5", "s1": "5, 2", "a1": "None"}
    at = run_app(page=page_file("explorer"), query=query)
    at.session_state["ex_sm_open"] = True
    at.run()
    assert not at.exception
    at.button(key="ex_sm_meshes").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Meshes & PartitionSpecs"
    assert at.query_params["mesh"] == str(N) and at.query_params["p0"] == "P('i')"
    assert at.query_params["s1"] == "5, 2" and at.query_params["p1"] == "P()"
    assert any(s.value.startswith(f"x: ({N}, 3, 5) P('i')") for s in at.subheader)
