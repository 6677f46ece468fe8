"""The collective picker: three boxes with the prefix's keys, seeded and read back."""

from tests.core.ui.conftest import render


def _picker(prefix):
    import streamlit as st

    from pmapviz.core.ui import collective_picker

    c1, c2, c3 = st.columns(3)
    chosen = collective_picker.boxes(c1, c2, c3, prefix, 5)
    st.write(f"chosen {chosen.key}")


def test_the_boxes_take_the_prefix_and_return_the_chosen_record():
    at = render(_picker, "zz_", state={"zz_c": "all_gather", "zz_n": "3", "zz_m": "2"})
    assert at.selectbox(key="zz_c").value == "all_gather"
    assert at.text_input(key="zz_n").value == "3" and at.text_input(key="zz_m").value == "2"
    assert at.text_input(key="zz_n").help == "1 to 5"
    assert "chosen all_gather" in at.markdown[-1].value
    at.selectbox(key="zz_c").set_value("ppermute").run()
    assert "chosen ppermute" in at.markdown[-1].value
