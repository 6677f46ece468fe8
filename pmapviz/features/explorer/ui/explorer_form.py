"""The explorer's settings: the presets, the function, out_axes, axis_name, the planned device
count and each argument's shape, dtype and in_axes boxes (widget keys ``ex_`` + the URL key).

The explorer owns the scenario every other page runs: :func:`show` keeps it in the session
(``url_state.EXPLORER_KEY``) on every edit."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import settings
from pmapviz.core.base.pytrees import is_tree_text
from pmapviz.core.planning import scenarios, seedpairs
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.core.ui import presenter, url_state
from pmapviz.features.explorer import presets

P = url_state.EXPLORER_PREFIX  # widget-state prefix of the explorer

EXPR_HELP = (
    "One Python expression over your arguments, checked against an allow-list and never run "
    "as code. Allowed: numbers, operators `+ - * / // % ** @`, one comparison, indexing like "
    "`x[0, 1:3]`, `jnp.<fn>` (sum, mean, dot, einsum, tanh, where, reshape, ...), `lax` "
    "collectives (psum, pmean, all_gather, ppermute, ...) with a literal axis name like "
    "`'i'`, `jax.nn.<fn>`, `jax.vmap`, `jax.grad` and `jax.value_and_grad` (of a lambda: "
    "`jax.grad(lambda w: jnp.mean((x @ w) ** 2))(w)`) and array methods (`.sum()`, "
    "`.reshape(...)`, `.T`). Not allowed: lambdas anywhere else, imports, other names, "
    "allocation from sizes (`jnp.zeros`)."
)


def shape_help(n: int) -> str:
    """The shape boxes' help, its example the seed's reshape on this server's ``n`` devices."""
    example = ", ".join(f"{d}" for d in seedpairs.split(n).blocked)
    return (
        f"Sizes separated by commas, e.g. {example}. () for a scalar. A pytree argument: a "
        "dict or tuple of shapes, e.g. {'w': (5, 2), 'b': (2,)}."
    )


IN_AXES_HELP = (
    "The axis to split across devices (0, 1, ...), or None. A negative axis works in JAX "
    "0.10's pmap only when it means axis 0. For a dict or tuple argument: one axis for all of "
    "it, or a prefix like {'w': None, 'b': 0}."
)


def pn_help(n: int) -> str:
    """The planned device count box's help, on a server of ``n`` devices."""
    return (
        f"Empty: this server's {n} devices. Up to {scenarios.MAX_PLAN_DEVICES:,}: plan "
        "and draw "
        "for a bigger machine from the shapes alone (mapped axes of that size are resized). "
        "Live outputs and the Timing lab always use this server's devices."
    )


def apply(texts: dict[str, str]) -> None:
    """Set these settings' widgets (keys as in the URL): a preset, a fix, a new function."""
    for name, value in texts.items():
        st.session_state[P + name] = value


def current(n: int) -> Scenario:
    """The settings as the widgets hold them (a slot not shown keeps its default)."""
    state = st.session_state.to_dict()  # one copy: each `in st.session_state` makes one
    return Scenario.from_texts({k: state[P + k] for k in scenarios.KEYS if P + k in state}, n)


def _last(n: int) -> Scenario:
    return Scenario.from_texts(st.session_state.get(url_state.EXPLORER_KEY) or {}, n)


def _on_fn_change(n: int) -> None:
    if P + "fn" not in st.session_state:  # forgotten meanwhile (a link or a step opened)
        return
    apply(_last(n).switched(st.session_state[P + "fn"], n).texts(every_slot=True))


def _on_pn_change(n: int) -> None:
    if P + "pn" not in st.session_state:  # forgotten meanwhile (a link or a step opened)
        return
    apply(_last(n).resized(st.session_state[P + "pn"], n).texts(every_slot=True))


def presets_row(n: int) -> None:
    """ "Start from an example": one button per preset, three to a row."""
    st.caption("Start from an example:")
    cols = st.columns(3)
    for k, preset in enumerate(presets.PRESETS):
        cols[k % 3].button(
            preset.label_for(n),
            key=f"preset_{preset.key}",
            on_click=apply,
            args=(preset.scenario(n).texts(every_slot=True),),
            width="stretch",
        )


def show(n: int) -> Scenario:
    """The settings' boxes; returns the scenario they hold, kept for the other pages."""
    with st.container(border=True):
        c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
        c1.selectbox(
            "Function f",
            scenarios.FUNCTIONS,
            key=P + "fn",
            on_change=_on_fn_change,
            args=(n,),
            format_func=scenarios.label,
        )
        c2.text_input("out_axes", key=P + "out", max_chars=12, help="An integer, or None.")
        c3.text_input(
            "axis_name",
            key=P + "name",
            max_chars=32,
            help="Needed by collectives such as lax.psum; e.g. i.",
        )
        c4.text_input(
            "Plan for N devices",
            key=P + "pn",
            max_chars=8,
            on_change=_on_pn_change,
            args=(n,),
            placeholder=f"{n} (this server)",
            help=pn_help(n),
        )
        if st.session_state[P + "fn"] == scenarios.EXPR:
            e1, e2 = st.columns([1, 3])
            e1.text_input(
                "Arguments",
                key=P + "args",
                max_chars=200,
                help="Names separated by commas, e.g. x, w (at most 6).",
            )
            e2.text_input("f(...) = ", key=P + "body", max_chars=500, help=EXPR_HELP)
            st.caption(
                "Your own f: one expression, checked and interpreted by pmapviz (hover ? "
                "for what is allowed); the code below exports it as a plain Python function."
            )
        else:
            st.caption(scenarios.program_for(st.session_state[P + "fn"]).description)
        _argument_boxes(current(n).arg_names, n)
    now = current(n)
    st.session_state[url_state.EXPLORER_KEY] = now.texts()
    return now


def argument_widths(shape_text, axes_text) -> list[int]:
    """Column widths for one argument's shape, dtype and in_axes boxes: a pytree argument
    gets a wider in_axes box (its prefix is a dict or tuple too)."""
    tree = is_tree_text(shape_text) or is_tree_text(axes_text)
    return [4, 3, 3] if tree else [4, 3, 2]


def _argument_boxes(names: list[str], n: int) -> None:
    """Shape, dtype and in_axes of each argument (each box labelled with its argument's
    name), as one row of columns per three arguments (fewer layout blocks per edit), or per
    argument in presenter mode, whose larger type needs the width."""
    per_row = 1 if presenter.presenting() else 3
    for row in range(0, len(names), per_row):
        ks = range(row, min(row + per_row, len(names)))
        widths = [
            w
            for k in ks
            for w in argument_widths(
                st.session_state.get(f"{P}s{k}"), st.session_state.get(f"{P}a{k}")
            )
        ]
        pad = [9 * (per_row - len(ks))] if len(names) > per_row > len(ks) else []  # alignment
        cols = st.columns(widths + pad)
        for j, k in enumerate(ks):
            a, b, c = cols[3 * j : 3 * j + 3]
            a.text_input(f"shape of {names[k]}", key=f"{P}s{k}", max_chars=200, help=shape_help(n))
            b.selectbox(f"dtype of {names[k]}", settings.DTYPES, key=f"{P}d{k}")
            c.text_input(f"in_axes of {names[k]}", key=f"{P}a{k}", max_chars=200, help=IN_AXES_HELP)
