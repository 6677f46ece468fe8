"""The Types page's settings (widgets ``ty_`` + the URL key, seeded from the link and written
back to it): which program, which modes are open, and the chosen program's own settings."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import settings
from pmapviz.core.planning import scenarios
from pmapviz.core.ui import url_state
from pmapviz.features import types as types_feature
from pmapviz.features.meshes import meshsettings
from pmapviz.features.training import trainingmodel
from pmapviz.features.types import typedcatalog, typesettings
from pmapviz.features.types.typedmodes import MODES
from pmapviz.features.types.typedsources import TypedSource

P = "ty_"
KEYS = {
    "meshes": ["mesh", "names", "ms0", "p0", "ms1", "p1", "ms2", "p2", "margs", "gf", "lf", "mout"],
    "explorer": [k for k in scenarios.KEYS if k != "pn"],
    "training": list(typesettings.TRAINING_KEYS),
    "seed": [],
}


def _sections_keys(n_devices: int) -> set[str]:
    """The URL keys of the page's other sections (their schemas in the page's record)."""
    mine = {f.key for f in typesettings.schema(n_devices).fields}
    return {k for k in types_feature.PAGE.keys(n_devices) if k not in mine}


def save_link(n_devices: int, also: dict[str, str] | None = None) -> None:
    """Write the link: this form's settings (the program, the modes, and the chosen program's
    own keys: not every program's) and ``also`` (another section's query); before that section
    has run, its keys as the link has them, so that it still finds them."""
    if also is None:
        others = _sections_keys(n_devices)
        also = {k: v for k, v in st.query_params.items() if k in others}
    prog = st.session_state.get(P + "prog", "meshes")
    keys = ["prog", "mode", *KEYS.get(prog, KEYS["meshes"])]
    url_state.save(P, typesettings.schema(n_devices), keys, also=also)


def show(n_devices: int) -> tuple[TypedSource | None, list[str]]:
    """The boxes; returns the program (None, after one error box per problem, when the
    settings make none) and the modes to show. Text that does not parse stops the page with
    one message per box."""
    schema = typesettings.schema(n_devices)
    url_state.load(P, schema)
    with st.container(border=True):
        c1, c2 = st.columns([2, 3])
        c1.selectbox(
            "Program",
            tuple(typesettings.PROGRAMS),
            key=P + "prog",
            format_func=lambda k: typesettings.PROGRAMS.get(k, k),
        )
        c2.multiselect(
            "Modes (each compiles when it is opened)",
            MODES,
            key=P + "mode",
            format_func=typesettings.mode_label,
            help="Auto: the compiler shards, the types carry no sharding. Explicit: the "
            "sharding is in every type. Manual: shard_map's per-device types.",
        )
        prog = st.session_state.get(P + "prog", "meshes")
        # a key keeps it open across the reruns its own boxes start (a bad value included)
        with st.expander("The program's settings", key=P + "open", on_change="rerun"):
            _boxes(prog if prog in KEYS else "meshes", n_devices)
    save_link(n_devices)
    prog = prog if prog in KEYS else "meshes"
    values = url_state.parsed(P, schema, ["prog", "mode", *KEYS[prog]])
    texts = {f.key: st.session_state.get(P + f.key, f.default) for f in schema.fields}
    try:
        return typedcatalog.from_values(values, texts, n_devices), values["mode"]
    except typedcatalog.Refused as err:
        url_state.show_errors(err.messages)
        return None, values["mode"]


def _boxes(prog: str, n_devices: int) -> None:
    if prog == "meshes":
        _mesh_boxes(n_devices)
    elif prog == "explorer":
        _explorer_boxes(n_devices)
    elif prog == "training":
        a, b, c = st.columns(3)
        a.selectbox("Model", trainingmodel.MODELS, key=P + "model")
        b.text_input("Global batch", key=P + "batch", max_chars=12)
        c.selectbox("Reduction", trainingmodel.REDUCTIONS, key=P + "red")
    else:
        st.caption(
            "The seed's example: 10,000,000 pairs of 3-vectors (rounded down to split evenly), "
            "x.reshape(n, pairs // n, 3), jax.pmap(jax.vmap(jnp.dot)). Shapes only: nothing "
            "is allocated."
        )


def _mesh_boxes(n_devices: int) -> None:
    a, b = st.columns([1, 2])
    a.text_input("Mesh (axis sizes)", key=P + "mesh", max_chars=40, help="e.g. 2x4")
    b.text_input("Axis names", key=P + "names", max_chars=120, help="e.g. data, model")
    for k in range(meshsettings.MAX_ARGS):
        a, b = st.columns([1, 2])
        a.text_input(f"Shape of argument {k + 1}", key=f"{P}ms{k}", max_chars=80)
        b.text_input(f"PartitionSpec of argument {k + 1}", key=f"{P}p{k}", max_chars=200)
    a, b = st.columns([1, 2])
    a.text_input("f's arguments", key=P + "margs", max_chars=120)
    b.text_input("out_specs (Manual)", key=P + "mout", max_chars=200)
    st.text_input("Global f (Auto, Explicit)", key=P + "gf", max_chars=500)
    st.text_input("Per-device f (Manual)", key=P + "lf", max_chars=500)


def _switch_function(n_devices: int) -> None:
    """A new function loads its own example (its shapes and axes, sized to the devices)."""
    state = st.session_state
    texts = {k: state.get(P + k, "") for k in scenarios.KEYS if P + k in state}
    current = scenarios.Scenario.from_texts({**texts, "fn": state[P + "fn"]}, n_devices)
    for key, value in current.switched(state[P + "fn"], n_devices).texts(every_slot=True).items():
        if key != "pn":
            state[P + key] = value


def _explorer_boxes(n_devices: int) -> None:
    a, b, c = st.columns([3, 1, 1])
    a.selectbox(
        "Function",
        scenarios.FUNCTIONS,
        key=P + "fn",
        format_func=scenarios.label,
        on_change=_switch_function,
        args=(n_devices,),
    )
    b.text_input("out_axes", key=P + "out", max_chars=80)
    c.text_input("axis_name", key=P + "name", max_chars=40)
    state = st.session_state
    texts = {k: state.get(P + k, "") for k in scenarios.KEYS if P + k in state}
    current = scenarios.Scenario.from_texts(texts, n_devices)
    if current.fn == scenarios.EXPR:
        a, b = st.columns([1, 3])
        a.text_input("Arguments of f", key=P + "args", max_chars=200)
        b.text_input("Body of f", key=P + "body", max_chars=500)
    for k in range(current.n_args):
        a, b, c = st.columns([2, 1, 1])
        a.text_input(f"shape {k + 1}", key=f"{P}s{k}", max_chars=120)
        b.text_input(f"in_axes {k + 1}", key=f"{P}a{k}", max_chars=80)
        c.selectbox(f"dtype {k + 1}", settings.DTYPES, key=f"{P}d{k}")
