"""The Meshes page's boxes: seeded from the link, parsed through meshes.schema, written back."""

from tests.core.ui.conftest import render


def _form(n):
    import streamlit as st

    from pmapviz.features.meshes.ui import mesh_form

    mesh, args = mesh_form.show(n)
    st.write(f"{mesh.shape} {mesh.names} {args}")


def test_the_form_reads_the_link_and_returns_the_arguments_given():
    at = render(
        _form,
        8,
        query={
            "mesh": "4x2",
            "names": "rows, cols",
            "s0": "8, 6",
            "p0": "P('rows', 'cols')",
            "s1": "",
            "s2": "",
        },
    )
    assert not at.exception and not at.warning
    said = at.markdown[-1].value
    assert said == "(4, 2) ('rows', 'cols') [('argument 1', (8, 6), ('rows', 'cols'))]"
    assert at.query_params["mesh"] == "4x2" and at.query_params["s1"] == ""


def test_names_that_do_not_fit_the_mesh_fall_back_with_a_note():
    at = render(_form, 8, query={"mesh": "2x2x2", "names": "data, model"})
    assert "names 2 axes; the mesh has 3" in at.warning[0].value
    assert at.markdown[-1].value.startswith("(2, 4) ('data', 'model')")


def test_the_arguments_take_fs_names_when_there_is_one_per_argument():
    at = render(
        _form,
        8,
        query={
            "mesh": "4x2",
            "names": "rows, cols",
            "s0": "8, 6",
            "p0": "P('rows')",
            "s1": "",
            "s2": "",
            "args": "a",
        },
    )
    assert at.markdown[-1].value.endswith("[('a', (8, 6), ('rows',))]")


def _typed_form(n):
    import streamlit as st

    from pmapviz.features.meshes.ui import mesh_form

    mesh, _ = mesh_form.show(n)
    st.write(f"types {mesh.axis_types}")


def test_one_axis_type_box_per_axis_named_after_it_read_from_the_link():
    at = render(_typed_form, 8, query={"mesh": "2x2x2", "names": "a, b, c", "t1": "manual"})
    assert not at.exception and not at.warning
    assert [s.label for s in at.selectbox] == ["Axis type of a", "Axis type of b", "Axis type of c"]
    assert at.markdown[-1].value == "types ('explicit', 'manual', 'explicit')"
    at.selectbox(key="me_t2").set_value("auto").run()
    assert at.markdown[-1].value == "types ('explicit', 'manual', 'auto')"
    assert at.query_params["t2"] == "auto"
    at.text_input(key="me_mesh").set_value("2x").run()  # no mesh to name: no boxes, one error
    assert not at.exception and not at.selectbox and len(at.error) == 1
