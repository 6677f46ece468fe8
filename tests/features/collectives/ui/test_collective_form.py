"""The Collectives playground's settings, seeded from the link and written back to it."""

from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _form(n):
    import streamlit as st

    from pmapviz.features.collectives.ui import collective_form

    coll = collective_form.show(n)
    devices, m = collective_form.sizes(n)
    choice = collective_form.choice(coll, devices)
    st.markdown(f"{coll.key} {devices} {m} {collective_form.value_kind()} {choice.perm}")


def test_ppermute_offers_its_permutations_and_its_pairs():
    query = {"c": "ppermute", "n": "4", "p": "custom", "pairs": "0->1, 1->0"}
    at = render(_form, TEST_DEVICES, query=query)
    assert not at.exception
    assert at.markdown[-1].value == f"ppermute 4 {max(4, TEST_DEVICES)} arange ((0, 1), (1, 0))"
    assert at.text_input(key="co_pairs").value == "0->1, 1->0"
    at.radio(key="co_p").set_value("ring left").run()
    assert at.query_params["p"] == "ring left" and "(1, 0)" in at.markdown[-1].value


def test_a_reduction_offers_groups_and_bad_sizes_stop_with_a_message():
    at = render(_form, TEST_DEVICES, query={"c": "psum"})
    assert at.text_input(key="co_g").label == "axis_index_groups (optional)"
    at.text_input(key="co_n").input("many").run()
    assert any("many" in e.value for e in at.error)


def test_the_values_are_labelled_as_what_they_are_and_an_old_link_keeps_working():
    import numpy as np

    from pmapviz.features.collectives import collectiveruns

    at = render(_form, TEST_DEVICES, query={"c": "psum", "n": "2", "m": "3", "v": "arange"})
    assert not at.exception
    radio = at.radio(key="co_v")
    assert radio.value == "arange" and "arange" in at.markdown[-1].value  # the link's word
    first = collectiveruns.make_input(2, 3, "arange")
    shown = ", ".join(f"{v:g}" for v in first.ravel()[:3]) + ", ..."
    assert radio.format_func("arange") == shown == "1, 2, 3, ..."  # what the devices hold
    assert "np.arange(1, n*m + 1)" in radio.help
    assert np.array_equal(first, np.arange(1, 7).reshape(2, 3))
    radio.set_value("random").run()
    assert at.query_params["v"] in ("random", ["random"])
