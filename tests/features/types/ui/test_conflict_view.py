"""The conflict playground's section, rendered: the operands drawn, JAX's refusal in plain words
first and its own words folded after, the resolutions' table with the best marked and the best
as code; a bad link gets one line and the defaults; presenter mode draws the picture first."""

from streamlit.testing.v1 import AppTest

from tests.core.ui.conftest import render, texts


def _section():
    import jax
    import streamlit as st

    from pmapviz.features.types.ui import conflict_view

    st.session_state["query"] = conflict_view.show(len(jax.devices()))


def _flat(at: AppTest) -> list:
    """Every element of the main area, in the page's order."""
    out = []

    def walk(node):
        for child in getattr(node, "children", {}).values():
            out.append(child)
            walk(child)

    walk(at.main)
    return out


def _study(query):
    from pmapviz.features.types import conflicts, conflictsettings

    sch = conflictsettings.schema(8)
    _, case, errors = conflictsettings.values_or_defaults({**sch.defaults(), **query}, 8)
    assert not errors
    return conflicts.study(case, query.get("pod", ""))


def test_the_default_conflict_is_refused_explained_and_resolved():
    at = render(_section)
    assert not at.exception and not at.error  # the refusal is the lesson, not the page's error
    (refusal,) = at.warning
    found = _study({})
    said = found.verdict.said
    # plain words first, JAX's own words folded after
    assert refusal.value.startswith("**JAX refuses `jnp.matmul(a, b)` for a `f32[64,32@d]`")
    assert found.verdict.explanation in refusal.value
    (words,) = [e for e in _flat(at) if type(e).__name__ == "Expander"]
    assert "JAX's own words (ShardingTypeError)" in words.label
    assert said.text in [c.value for c in words.code]
    (table,) = at.dataframe
    frame = table.value
    assert list(frame["code"]) == [r.code for r in found.resolutions]
    assert list(frame["result (JAX's type)"]) == [r.out_type for r in found.resolutions]
    assert list(frame[""]).count("★ best") == 1
    best = found.resolutions[found.best()]
    assert frame[""][found.best()] == "★ best"
    assert frame["collective bytes / device"][found.best()] == f"{best.sent_bytes:,}"
    assert at.code[-1].value == best.code
    shown = texts(at)
    assert "role='img'" in shown and "device 7" in shown  # the operands on the mesh
    from pmapviz.features.types import conflictsettings

    assert at.session_state["query"] == conflictsettings.schema(8).defaults()  # for the link


def test_a_new_operation_starts_from_its_own_conflict():
    at = render(_section)
    at.selectbox[0].set_value("add").run()
    assert not at.exception
    assert [t.value for t in at.text_input] == ["64, 32", "P('d', None)", "64, 32", "P(None, 'd')"]
    (refusal,) = at.warning
    assert refusal.value.startswith("**JAX refuses `a + b`")
    at.selectbox[0].set_value("einsum").run()
    at.selectbox[1].set_value("bij,bjk->bik").run()
    assert at.text_input[0].value == "16, 64, 32"
    assert "jnp.einsum('bij,bjk->bik', a, b)" in at.warning[0].value


def test_an_accepted_call_says_the_type_jax_infers():
    query = {"c_pa": "P('d', None)", "c_pb": "P('d', None)"}
    at = render(_section, query=query)
    (ok,) = at.success
    assert f"the result's type is `{_study(query).verdict.out_type}`" in ok.value
    assert not at.error


def test_a_bad_link_gets_one_line_and_the_defaults():
    at = render(_section, query={"c_pa": "P('<b>d</b>')"})
    note, refusal = at.warning
    assert "`P('<b>d</b>')`" in note.value and "Using the default" in note.value
    assert at.text_input[1].value == "P(None, 'd')"
    assert refusal.value.startswith("**JAX refuses")  # the defaults' case, studied


def test_bad_text_in_a_box_gets_one_line_and_the_defaults_case():
    at = render(_section)
    at.text_input[0].set_value("((64, 32))").run()
    (first,) = [e.value for e in at.error]
    assert "nested in brackets" in first and first.endswith("Showing the defaults.")
    assert at.warning[0].value.startswith("**JAX refuses `jnp.matmul(a, b)` for a `f32[64,32@d]`")


def test_with_a_tpu_slice_the_table_has_the_compilers_time():
    at = render(_section, query={"pod": "v5e:2x4"})
    assert not at.exception
    frame = at.dataframe[0].value
    found = _study({"pod": "v5e:2x4"})
    assert "TPU time (v5e:2x4)" in frame.columns and "communication (model)" in frame.columns
    assert frame[""][found.best()] == "★ best"
    assert "v5e:2x4" in texts(at)


def test_presenter_mode_draws_the_picture_before_the_settings():
    at = render(_section, state={"present": True})
    kinds = [type(e).__name__ for e in _flat(at)]
    picture = next(
        k for k, e in enumerate(_flat(at)) if "role='img'" in str(getattr(e, "value", ""))
    )
    assert picture < kinds.index("Selectbox") and picture < kinds.index("TextInput")
    plain = render(_section)
    flat = _flat(plain)
    picture = next(k for k, e in enumerate(flat) if "role='img'" in str(getattr(e, "value", "")))
    assert picture > [type(e).__name__ for e in flat].index("TextInput")


def test_what_libtpu_refuses_is_said_once_with_every_refusal_folded():
    query = {"c_a": "16777216, 1024", "c_b": "1024, 1024", "pod": "v5e:2x4"}
    at = render(_section, query=query)
    found = _study(query)
    refused = [r for r in found.resolutions if r.pod_error]
    assert refused and all(r.pod is None for r in refused)
    lesson, said = at.warning  # JAX's refusal of the case (the lesson), then libtpu's
    assert lesson.value.startswith("**JAX refuses")
    assert said.value.startswith(f"libtpu refused {len(refused)} of the {len(found.resolutions)}")
    assert "does not fit on v5e:2x4" in said.value
    assert list(at.dataframe[0].value["TPU time (v5e:2x4)"]).count("refused") == len(refused)


def test_several_slices_in_the_link_are_one_line_that_says_where_they_compile():
    """Issue 66: this page compiles its Explicit-axis programs for one slice; a multislice link is
    one line naming the pages that take several slices, and the study runs here."""
    at = render(_section, query={"pod": "2 x v5e:2x4"})
    assert not at.exception
    (said,) = [w.value for w in at.warning if "pod=" in w.value]
    assert "joins 2 slices (Multislice): this page compiles for one slice" in said, said
    assert said.endswith("Using the default, this machine.")
    assert "pick one, e.g. v5e:2x4" in said and "Compiled, Training and Meshes pages" in said
    assert all("TPU time" not in c for c in at.dataframe[0].value.columns)
