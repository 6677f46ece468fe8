"""Guided tour: the seed's path through pmap in ten steps, each with a small live demo on this
server's devices and a link that opens the full page with the same settings."""

import jax
import numpy as np
import streamlit as st

from pmapviz import benchmarking, catalog, collectives, dotproduct, planning, programs, training, ui
from pmapviz.planning import fmt_shape

ui.ensure_routed()

report = ui.device_report()
n = report.count
STEPS = [
    "Emulating devices on a CPU",
    "pmap basics",
    "The 10M-pair dot product",
    "The mapped axis and the device count",
    "in_axes and out_axes",
    "axis_name and collectives",
    "Data-parallel training",
    "Multiple processes",
    "Sublinear scaling",
    "pmap today: shard_map and jit + NamedSharding",
]

raw = st.query_params.get("step", "1")
if not (raw.isdigit() and 1 <= int(raw) <= len(STEPS)):
    st.warning(f"The link's step={raw[:20]!r} is not a step from 1 to {len(STEPS)}; "
               "starting at step 1.", icon=":material/link_off:")  # fmt: skip
    raw = "1"
if st.session_state.get("tour_step") is None:
    st.session_state["tour_step"] = int(raw)


def _go(step: int) -> None:
    st.session_state["tour_step"] = max(1, min(len(STEPS), step))


step = st.session_state["tour_step"]
ui.set_url({"step": str(step)})
ui.share_link("tour")

st.title("Guided tour")
st.progress(step / len(STEPS), text=f"Step {step} of {len(STEPS)}: {STEPS[step - 1]}")
nav = st.columns([1, 4, 1])
nav[0].button("Previous", on_click=_go, args=(step - 1,), disabled=step == 1,
              icon=":material/arrow_back:", key="tour_prev", width="stretch")  # fmt: skip
nav[1].selectbox("Jump to step", list(range(1, len(STEPS) + 1)), index=step - 1,
                 format_func=lambda k: f"{k}. {STEPS[k - 1]}", key="tour_jump",
                 on_change=lambda: _go(st.session_state["tour_jump"]),
                 label_visibility="collapsed")  # fmt: skip
nav[2].button("Next", on_click=_go, args=(step + 1,), disabled=step == len(STEPS),
              icon=":material/arrow_forward:", key="tour_next", width="stretch")  # fmt: skip
st.header(f"{step}. {STEPS[step - 1]}")


def open_full(label: str, path: str) -> None:
    st.markdown(f":material/open_in_new: [{label}]({path})")


@st.cache_data(max_entries=16, show_spinner=False)
def _hello(n: int):
    r = programs.run_hello(programs.hello_program(), n)
    return [(s.device, s.position, int(x.data[0]), int(s.data[0]))
            for x, s in zip(r.inputs, r.outputs, strict=True)]  # fmt: skip


@st.cache_data(max_entries=8, show_spinner=False)
def _dot(n: int):
    r = dotproduct.run_dot(n * 10_000, n, repeat=2, limit=10**8)
    return r.pmap_out_shape, r.flat_shape, r.max_abs_diff, r.allclose, r.without_vmap_shape


@st.cache_data(max_entries=8, show_spinner=False)
def _too_many(n: int):
    """JAX's own error for a mapped axis larger than the device count, next to pmapviz's."""
    try:
        jax.pmap(lambda v: v * 2)(np.zeros((n + 1, 3), np.float32))
        jax_msg = "(no error)"
    except Exception as err:  # the real, cryptic message  # noqa: BLE001
        jax_msg = f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
    p = planning.plan(catalog.get("double"), [(n + 1, 3)], n_devices=n)
    return jax_msg, p.problems[0].message, p.problems[0].fix


@st.cache_data(max_entries=8, show_spinner=False)
def _train(n: int):
    h = training.train(training.Config("linear", n, 32 * n, 30, 0.05))
    return h.losses[0], h.losses[-1], h.replicas_identical, h.max_param_diff


@st.cache_data(max_entries=8, show_spinner=False)
def _three(n: int):
    return programs.three_ways(n, 1000)


if step == 1:
    st.markdown(
        f"""
JAX can pretend one CPU is several devices. This server asked for **{n}**, before JAX
started, with `jax.config.update("jax_num_cpu_devices", {n})` (or
`XLA_FLAGS=--xla_force_host_platform_device_count={n}`). After JAX's first operation the count
cannot change: it is fixed for the whole process. To show another count, restart the server:
"""
    )
    st.code(report.restart_command(4), language="bash")
    st.markdown(ui.device_chips(report), unsafe_allow_html=True)
    st.info(f"These {n} devices share {report.physical_cores} physical core(s): they show how "
            "pmap works, not how fast it is.", icon=":material/info:")  # fmt: skip
    open_full("Home: the device set", "/")
elif step == 2:
    st.markdown(
        "`jax.pmap(f)` compiles `f` once with XLA, replicates it to every device and runs one "
        "copy per device on its slice of the input: SPMD, single program, multiple data. No "
        "separate `jax.jit` is needed. Here `pmap(lambda x: x * 2)` on `arange(n)`:"
    )
    cells = _hello(n)
    st.markdown(ui.block_grid([
        ("device", [(d, p, d) for d, p, _, _ in cells]),
        ("x", [(str(x), p, "input") for _, p, x, _ in cells]),
        ("x * 2", [(str(y), p, "computed on this device") for _, p, _, y in cells]),
    ]), unsafe_allow_html=True)  # fmt: skip
    open_full("Home: hello pmap", "/")
elif step == 3:
    pairs = n * 10_000
    out_shape, flat, diff, ok, wrong = _dot(n)
    st.markdown(
        f"""
Ten million pairs of 3-vectors do not fit pmap's rule (the mapped axis may not exceed the
device count), so reshape `(pairs, 3)` to `({n}, pairs / {n}, 3)`, run
`jax.pmap(jax.vmap(jnp.dot))`, and reshape back. Live, with {pairs:,} pairs:
**{fmt_shape(out_shape)} -> reshape -> {fmt_shape(flat)}**, equal to `jit(vmap(dot))`:
**{ok}** (max |diff| {diff:.2g}). Without `vmap`, pmap of `vdot` gives {fmt_shape(wrong)}: one
number per device, the wrong meaning.
"""
    )
    block = f"{10_000_000 // n:_}"
    open_full("Explorer with the seed's shapes", f"/explorer?fn=batched_dot&s0={n},{block},3"
              f"&s1={n},{block},3&a0=0&a1=0&out=0")  # fmt: skip
    open_full("Live outputs: the full 10M example", "/live")
elif step == 4:
    jax_msg, ours, fix = _too_many(n)
    st.markdown(f"What happens when the mapped axis has {n + 1} elements and there are {n} "
                "devices? JAX itself says:")  # fmt: skip
    st.code(jax_msg, language="text")
    st.markdown("which does not tell you what to change. pmapviz, from the shapes alone:")
    st.error(ours, icon=":material/block:")
    st.markdown(f"**Fix:** {fix}")
    open_full("Explorer with this mistake", f"/explorer?fn=double&s0={n + 1},3&a0=0&out=0")
elif step == 5:
    rows = []
    for label, fn, shapes, axes, out in [
        ("a broadcast argument (None)", "matmul", [(n, 4, 5), (5, 2)], (0, None), 0),
        ("a non-leading mapped axis", "add", [(3, n), (3, n)], (1, 1), 0),
        ("out_axes=1", "double", [(n, 3)], (0,), 1),
    ]:  # fmt: skip
        p = planning.plan(catalog.get(fn), shapes, in_axes=axes, out_axes=out, n_devices=n)
        rows.append({"case": label, "f": catalog.get(fn).body(None),
                     "inputs": ", ".join(fmt_shape(s) for s in shapes), "in_axes": str(axes),
                     "out_axes": out, "each device gets": ", ".join(
                         fmt_shape(s) for s in p.per_device_in_shapes),
                     "result": fmt_shape(p.out_shapes)})  # fmt: skip
    st.markdown(
        "`in_axes` says which axis of each argument is split (None: every device "
        "gets all of it); `out_axes` says where the device axis goes in the result."
    )
    st.dataframe(rows, hide_index=True, width="stretch")
    open_full("Explorer: broadcast weights", f"/explorer?fn=matmul&s0={n},4,5&s1=5,2&a0=0&a1=None")
    open_full("Explorer: mapped axis 1, out_axes=1",
              f"/explorer?fn=add&s0=3,{n}&s1=3,{n}&a0=1&a1=1&out=1")  # fmt: skip
elif step == 6:
    st.markdown(
        "With `axis_name='i'`, the copies of f can talk: `lax.psum(x, 'i')` sums "
        "over devices. Normalising by the global sum, then a ring shift with "
        "`ppermute`:"
    )
    for key, perm in (("normalise", None), ("ppermute", collectives.ring(n, "right"))):
        out = collectives.run(key, n, 1, perm=perm)
        st.markdown(f"`{out.code}`")
        st.markdown(ui.block_grid([
            ("before", [(f"{b[0]:g}", d, "") for d, b in enumerate(out.before)]),
            ("after", [(f"{float(np.asarray(a).reshape(-1)[0]):.3g}", None, "")
                       for a in out.after]),
        ]), unsafe_allow_html=True)  # fmt: skip
    open_full("Collectives: normalise", f"/collectives?c=normalise&n={n}&m=1")
    open_full("Collectives: ppermute ring", f"/collectives?c=ppermute&n={n}&m=1&p=ring+right")
elif step == 7:
    first, last, same, diff = _train(n)
    st.markdown(
        f"Each device gets a shard of the batch and a copy of the parameters; `lax.pmean` of "
        f"the gradients makes every device apply the same update. Live, 30 steps of linear "
        f"regression on {n} devices: loss {first:.3g} -> {last:.3g}; replicas identical at "
        f"every step: **{same}**; difference from one-device training: {diff:.2g}."
    )
    open_full("Data-parallel training", f"/training?k={n}&steps=100")
elif step == 8:
    st.markdown(
        "Across hosts, each process sees its **local** devices; collectives span the "
        "**global** ones. This starts two real processes with one device each, joined by "
        "`jax.distributed.initialize` (about two seconds):"
    )
    if st.button("Launch 2 processes", key="tour_cluster", icon=":material/rocket_launch:"):
        from pmapviz import cluster

        on_wait, clear_wait = ui.queue_display(cluster.TURNS, stop_key="tour_stop_cluster")
        try:
            res = cluster.launch(2, 1, timeout=30, compare_single=False, on_wait=on_wait)
            clear_wait()
            st.dataframe([{"process": p["process_index"],
                           "local devices": str(p["local_device_ids"]),
                           "global devices": p["global_devices"], "psum": p["psum"]}
                          for p in res.per_process], hide_index=True)  # fmt: skip
        except (cluster.ClusterError, OSError) as err:
            clear_wait()
            st.error(str(err), icon=":material/error:")
    open_full("Multi-process", "/cluster?p=2&d=2")
elif step == 9:
    st.markdown(
        f"More devices speed things up only when each has its own compute, and only until "
        f"communication eats the gain: scaling is sublinear. Here the {n} devices share "
        f"{report.physical_cores} core(s), so expect no gain at all:"
    )
    if st.button("Time x * 2 + 1 on 1 and on all devices", key="tour_time",
                 icon=":material/timer:"):  # fmt: skip
        on_wait, clear_wait = ui.queue_display(benchmarking.TURNS, stop_key="tour_stop_time")
        try:
            rep = benchmarking.sweep(benchmarking.WORKLOADS["elementwise"], [2**20], [1, n],
                                     ["pmap", "vmap"], repeat=5, on_wait=on_wait)  # fmt: skip
        except (benchmarking.BenchError, TimeoutError) as err:  # a wait that timed out, too
            rep = None
            st.error(str(err), icon=":material/hourglass_disabled:")
        clear_wait()
        if rep is not None:
            st.dataframe([{"impl": m.impl, "devices": m.devices,
                           "compute (ms, median)": round(m.run_s_median * 1e3, 3),
                           "memory floor (ms)": round(m.floor_s * 1e3, 3)}
                          for m in rep.results], hide_index=True)  # fmt: skip
    open_full("Timing lab", "/timing")
else:
    r = _three(n)
    table = "\n".join([
        "| API | view | input | result | agrees with pmap |",
        "|---|---|---|---|---|",
        f"| `jax.pmap(jax.vmap(jnp.dot))` | per device, the mapped axis removed | "
        f"`({n}, 1000, 3)` | {fmt_shape(r['pmap_shape'])} | (reference) |",
        f"| `jax.jit(jax.shard_map(..., in_specs=P('i')))` | per device, blocks keep their "
        f"rank | `({n * 1000}, 3)` | {fmt_shape(r['shard_map_shape'])} sharded "
        f"{r['shard_map_sharding']} | max diff {r['max_diff_shard_map']:.2g} |",
        f"| `jax.jit(jax.vmap(jnp.dot))` on `NamedSharding` inputs | global: XLA partitions "
        f"it | `({n * 1000}, 3)` | {fmt_shape(r['jit_shape'])} sharded {r['jit_sharding']} "
        f"over {r['jit_devices']} devices | max diff {r['max_diff_jit']:.2g} |",
    ])  # fmt: skip
    st.markdown(
        f"pmap is now `jit(shard_map(...))` and in maintenance mode. The same {n}-device dot "
        f"products, three ways, live:\n\n{table}"
    )
    st.markdown(
        "**When to use which.** `jit` + `NamedSharding` for most new code: write global-view "
        "code and let XLA insert the communication. `shard_map` when you want to write the "
        "per-device program and its collectives yourself. `pmap` for existing code and for "
        "learning the per-device picture; it no longer nests."
    )
    open_full("Explorer: the code tab shows the shard_map version", "/explorer")
