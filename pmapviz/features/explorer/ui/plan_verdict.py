"""The explorer's verdict on a plan: the pmap call, then either each thing pmap would reject
with its fix and a button that applies it, and then what JAX itself says about the call (its
exception, verbatim, collapsed), or what the valid call does on every device."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base.valuetext import fmt_shape, md_tree
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan
from pmapviz.core.running import jaxsays
from pmapviz.features.explorer import codegen
from pmapviz.features.explorer.ui import explorer_form


def fix_keys(problems) -> list[str]:
    """One widget key per problem's fix button: the same problem can come twice (e.g. a
    negative in_axes for x and for y), so a repeat gets its count."""
    codes = [p.code for p in problems]
    return [
        f"fix_{p.code}" + (f"_{again}" if (again := codes[:k].count(p.code)) else "")
        for k, p in enumerate(problems)
    ]


LESSON = (
    "This example is a mistake on purpose: below is what pmap would reject, said in "
    "your shapes, and the fix. Apply it to see the valid call."
)


def show(program: Program, plan: Plan, n: int, elsewhere: bool, lesson: bool = False) -> bool:
    """The call, and either what pmap would reject (with fixes) or what it does on this
    server's ``n`` devices (or the planned count). True: the plan is valid. ``lesson``: the
    settings are a mistake made on purpose (a preset), so its problems are drawn as the
    lesson, not as errors."""
    N = plan.n_devices
    if elsewhere:
        st.info(
            f"Planning for **{N:,} devices** from the shapes alone; this server has {n}. "
            "Live outputs and the Timing lab run on this server's devices.",
            icon=":material/dns:",
        )
    st.code(codegen.pmap_call(plan, compact=True), language="python")
    if lesson and plan.problems:
        st.info(LESSON, icon=":material/school:")
    for problem, key in zip(plan.problems, fix_keys(plan.problems), strict=True):
        _problem(program, problem, key, lesson)
    if not plan.ok:
        jax_words(program, plan)
        return False
    local_args = [(leaf.name, leaf.local_shape) for leaf in plan.leaves]
    st.success(
        f"Valid. pmap uses **{plan.devices_used:,} of the {N:,} devices**; each runs f on "
        + ", ".join(f"`{a}` {fmt_shape(s)}" for a, s in local_args)
        + f" and returns {md_tree(plan.per_device_out_shapes)}. Result: "
        f"**{md_tree(plan.out_shapes)}** {md_tree(plan.out_dtypes)}.",
        icon=":material/check_circle:",
    )
    for note in plan.notes:
        st.info(note, icon=":material/info:")
    if plan.out_axes is None:
        st.info(
            "out_axes=None is safe here: the output is the same on every device (it "
            "comes from a collective), so pmap returns one copy.",
            icon=":material/info:",
        )
    return True


def _problem(program: Program, problem, key: str, lesson: bool = False) -> None:
    """One thing pmap would reject, its fix, and a button (widget ``key``) that applies it;
    in a lesson, the message as what pmap would say rather than an error of the page."""
    with st.container(border=True):
        if lesson:
            st.warning(problem.message, icon=":material/school:")
        else:
            st.error(problem.message, icon=":material/block:")
        st.markdown(f"**Fix:** {problem.fix}")
        if problem.new_axes:
            new = {f"a{k}": str(a) for k, a in problem.new_axes.items()}
            label = "; ".join(
                f"in_axes={a} for {program.arg_names[k]}" for k, a in problem.new_axes.items()
            )
            st.button(
                f"Apply: {label}",
                key=key,
                on_click=explorer_form.apply,
                args=(new,),
                type="primary",
                icon=":material/auto_fix_high:",
            )
        if problem.new_shapes:
            new = {f"s{k}": ", ".join(f"{d:_}" for d in s) for k, s in problem.new_shapes.items()}
            label = "; ".join(
                f"{program.arg_names[k]} -> {fmt_shape(s)}" for k, s in problem.new_shapes.items()
            )
            st.button(
                f"Apply: reshape {label}",
                key=key + "_shape" * bool(problem.new_axes),
                on_click=explorer_form.apply,
                args=(new,),
                type="primary",
                icon=":material/auto_fix_high:",
            )


def jax_words(program: Program, plan: Plan) -> None:
    """What JAX itself says about this call (one lowering per plan, kept), after pmapviz's own
    explanation: its exception verbatim in a collapsed code block (never markdown: it quotes
    the user's shapes and names), or that it raises none; or, in one line, why JAX cannot be
    asked here (a plan for more devices than this server has)."""
    said = jaxsays.jax_says(program, plan)
    if said is not None and not said.asked:
        st.caption(said.not_asked)
        return
    label = "What JAX itself says" + (f": {said.name}" if said is not None else ": no error")
    with st.expander(label, icon=":material/terminal:"):
        if said is None:
            st.markdown(
                "JAX raises no error for this call on these devices: it runs it as written, "
                "without a word about what is said above."
            )
            return
        st.caption(
            f"What `jax.pmap` raises at its first call with these shapes on "
            f"{plan.n_devices:,} device(s), read from a real lowering of the call (no data "
            "made). A traceback ends with this line:"
        )
        st.code(said.text, language=None, wrap_lines=True)
