"""Collectives playground: one collective, run for real; every device before and after."""

import streamlit as st

from pmapviz import charts, collectives, compiled, devicefacts, ui

ui.ensure_routed()

report = ui.device_report()
n_all = report.count
labels = report.labels
P = "co_"

st.title("Collectives")
slot = ui.picture_slot()  # presenter mode: before and after, above the settings
st.markdown(
    "Inside `pmap(f, axis_name='i')`, a collective lets the copies of `f` exchange values. "
    "Each device starts with its own block `x`; pick a collective and see what every device "
    "holds afterwards. All values are read from the real arrays' shards."
)

keys = [c.key for c in collectives.COLLECTIVES]
schema = collectives.schema(n_all)
ui.load_url_settings(P, schema)


@st.cache_resource(max_entries=64, show_spinner=False)
def _compiled(key, n, groups, perm):
    return collectives.compile_collective(key, n, groups, perm)


with st.container(border=True):
    c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
    c1.selectbox("Collective", keys, key=P + "c",
                 format_func=lambda k: collectives.BY_KEY[k].label)  # fmt: skip
    c2.text_input("Devices", key=P + "n", max_chars=6, help=f"1 to {n_all}")
    c3.text_input("Elements per device", key=P + "m", max_chars=6, help="1 to 64")
    c4.radio("Values", collectives.VALUE_KINDS, key=P + "v")
    coll = collectives.BY_KEY[st.session_state[P + "c"]]
    if coll.uses_groups:
        st.text_input(
            "axis_index_groups (optional)", key=P + "g", max_chars=400,
            placeholder="e.g. 0 1 | 2 3   (empty: all devices in one group)",
            help="Groups of devices that reduce among themselves; they must split all devices. "
            "Unequal sizes run on CPU (pmean then divides by the first group's size, wrongly; "
            "TPUs refuse them).",
        )  # fmt: skip
    if coll.key == "ppermute":
        p1, p2 = st.columns([1, 2])
        p1.radio("Permutation", collectives.PERMUTATIONS, key=P + "p")
        if st.session_state[P + "p"] == "custom":
            p2.text_input(
                "Pairs source->destination",
                key=P + "pairs",
                max_chars=400,
                help="e.g. 0->1, 1->2. Devices that no pair sends to get zeros.",
            )
ui.save_url_settings(P, ["c", "n", "m", "v", "g", "p", "pairs"])
ui.share_link("collectives")


values = ui.parsed(P, schema, ["n", "m"])
n, m = values["n"], values["m"]
try:
    choice = collectives.playground_choice(
        coll.key,
        n,
        st.session_state[P + "g"],
        st.session_state[P + "pairs"],
        st.session_state[P + "p"],
    )
    groups = [list(g) for g in choice.groups] if choice.groups else None
    perm = [tuple(p) for p in choice.perm] if choice.perm else None
    out = ui.queued(lambda on_wait: collectives.run(
        coll.key, n, m, st.session_state[P + "v"], groups=groups, perm=perm,
        program_cache=_compiled, on_wait=on_wait))  # fmt: skip
except collectives.CollectiveError as err:
    st.error(str(err), icon=":material/block:")
    st.stop()
if out is None:  # the wait for memory ended without room (said above)
    st.stop()

st.code(f"y = jax.pmap(lambda x: {out.code}, axis_name='i')(x)   # x: ({n}, {m})",
        language="python")  # fmt: skip
show = collectives.show_values
wrong = collectives.differs_from_numpy(out)


rows = [
    ("device", [(labels[d], d, f"{labels[d]}: position {d} on the axis") for d in range(n)]),
    ("x before", [(show(out.before[d]), d, f"device {d} starts with {show(out.before[d])}")
                  for d in range(n)]),
    ("y after", [(show(out.after[d]), None, f"device {d} ends with {show(out.after[d])}")
                 for d in range(n)]),
]  # fmt: skip
if wrong:
    rows.append(("numpy expects", [(show(out.expected[d]), None, "the mathematically right "
                                    "result, from numpy") for d in range(n)]))  # fmt: skip
if coll.kind in ("gather", "permute", "scatter") and coll.key != "psum_scatter":
    tip = "which device each piece came from: the collective's definition, checked by value"
    rows.append(("came from", [(ui.chips(out.sources[d]), None, tip) for d in range(n)]))
elif coll.kind in ("reduce", "normalise") or coll.key == "psum_scatter":
    group_of = {d: g for g in (groups or [list(range(n))]) for d in g}
    rows.append(("combines", [(ui.chips(group_of[d]), None,
                               f"device {d}'s result combines devices {group_of[d]}")
                              for d in range(n)]))  # fmt: skip
with ui.picture(slot):
    ui.grid(rows, collectives.picture_label(out))
for warning in out.warnings:
    st.warning(warning, icon=":material/warning:")
if coll.key == "ppermute":
    st.plotly_chart(
        charts.permutation_figure(labels[:n], out.perm), config={"displayModeBar": False}
    )
    idle = sorted(set(range(n)) - {d for _, d in out.perm})
    if idle:
        st.info(f"Device(s) {idle} are no pair's destination, so they receive **zeros**.",
                icon=":material/info:")  # fmt: skip

sent, recv = out.cost["sent"], out.cost["received"]
st.markdown(
    f"**Communication**: each device sends about **{sent:,.0f} bytes** and receives about "
    f"**{recv:,.0f} bytes** for {n} devices x {m} float32 elements. Model: {out.model}. "
    + devicefacts.say(report.facts, "wire")
)

with st.expander("What XLA compiles this to", icon=":material/memory_alt:"):
    if st.toggle("Compile it and read the HLO", key="co_xla"):
        ui.show_analysis(compiled.analyse_collective(coll.key, n, m, choice.groups, choice.perm),
                         labels)  # fmt: skip
