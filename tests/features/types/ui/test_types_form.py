"""The Types page's boxes: seeded from the link, parsed through typesettings, written back,
the chosen program's own boxes only."""

from tests.core.ui.conftest import render


def _form(n):
    import streamlit as st

    from pmapviz.features.types.ui import types_form

    source, modes = types_form.show(n)
    st.write(f"{modes} {source.label if source else None}")


def test_the_default_is_the_meshes_f_in_explicit_mode():
    at = render(_form, 8)
    assert not at.exception and not at.warning
    assert at.markdown[-1].value.startswith("['explicit'] f(x, w) = x @ w on data=2 x model=4")
    assert at.query_params["prog"] == "meshes" and at.query_params["mode"] == "explicit"
    assert at.text_input(key="ty_gf").value == "x @ w"


def test_a_link_opens_the_explorer_s_program_with_its_boxes():
    at = render(_form, 8, query={"prog": "explorer", "fn": "matmul", "mode": "manual,auto"})
    assert not at.exception
    assert at.markdown[-1].value.startswith("['auto', 'manual'] Matrix multiply: x @ w")
    keys = {w.key for w in at.text_input}
    assert {"ty_s0", "ty_s1", "ty_a0"} <= keys and "ty_s2" not in keys and "ty_gf" not in keys


def test_choosing_another_function_loads_its_example():
    at = render(_form, 8, query={"prog": "explorer", "fn": "matmul"})
    at.selectbox(key="ty_fn").set_value("double").run()
    assert not at.exception
    assert at.text_input(key="ty_s0").value == "8, 4"
    assert at.markdown[-1].value.endswith("f: x * 2")


def test_settings_that_make_no_program_show_one_error_each():
    at = render(_form, 8, query={"prog": "training", "batch": "9"})
    assert not at.exception
    assert "does not split evenly over 8 devices" in at.error[0].value
    assert at.markdown[-1].value == "['explicit'] None"
    at.multiselect(key="ty_mode").set_value([]).run()
    assert [e.value for e in at.error] == [
        "Modes is empty: open at least one of auto, explicit, manual."
    ]
