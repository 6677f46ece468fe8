"""A page's settings and its link: read through Schema.from_query, written through
Schema.to_query, the same keys and values both ways."""

from pmapviz.core.planning import scenarios
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.timing import sweepsetup
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _collectives_page(n):
    from pmapviz.core.ui import url_state
    from pmapviz.features.collectives import collectivechoices

    url_state.load("co_", collectivechoices.schema(n))
    url_state.save("co_", collectivechoices.schema(n))


def test_a_link_is_read_into_the_widgets_and_written_back_unchanged():
    query = {
        "c": "ppermute",
        "n": "4",
        "m": "3",
        "v": "random",
        "g": "",
        "p": "custom",
        "pairs": "0->1, 1->0",
    }
    at = render(_collectives_page, TEST_DEVICES, query=query)
    assert not at.exception and not at.warning
    assert at.session_state["co_c"] == "ppermute" and at.session_state["co_pairs"] == "0->1, 1->0"
    assert dict(at.query_params) == query


def test_a_bad_value_in_a_link_becomes_the_default_with_a_note_and_the_link_is_repaired():
    at = render(_collectives_page, TEST_DEVICES, query={"c": "psum", "n": "99999"})
    assert [w.value for w in at.warning if "n=" in w.value]  # the note says which and why
    assert at.session_state["co_n"] == str(TEST_DEVICES)
    assert at.query_params["n"] == str(TEST_DEVICES)
    at.run()  # the note stays until the settings change
    assert at.warning


def _timing_link(n, sizes):
    from pmapviz.core.ui import url_state
    from pmapviz.features.timing import sweepsetup

    url_state.load("tl_", sweepsetup.schema(n))
    url_state.save("tl_", sweepsetup.schema(n), sizes=sizes)


def test_lists_are_written_as_the_link_writes_them_and_a_value_kept_elsewhere_overrides():
    ks = ",".join(map(str, sweepsetup.device_counts(TEST_DEVICES)))
    at = render(_timing_link, TEST_DEVICES, [1024, 4096], query={"ks": ks, "impls": "pmap,vmap"})
    assert not at.exception
    assert dict(at.query_params) == {
        "w": "dot",
        "r": "7",
        "sizes": "1024,4096",
        "ks": ks,
        "impls": "pmap,vmap",
    }


def _some_keys(n):
    from pmapviz.core.ui import url_state
    from pmapviz.features.compiled import compiledsettings

    url_state.load("cp_", compiledsettings.schema(n))
    also = url_state.scenario_query(url_state.explorer_scenario(n), n)
    url_state.save("cp_", compiledsettings.schema(n), ["src"], also=also)


def test_only_the_keys_asked_for_and_another_schemas_query_after_them():
    texts = {"fn": "add", "s0": "8, 4", "s1": "8, 4"}
    at = render(_some_keys, TEST_DEVICES, query={"src": "explorer", **texts})
    expected = {"src": "explorer", **Scenario.from_texts(texts, TEST_DEVICES).query()}
    assert dict(at.query_params) == expected
    assert list(at.query_params)[0] == "src"


def test_the_scenarios_query_is_its_own_and_its_schemas_inverse():
    for texts in (
        {"fn": "expr", "args": "x", "body": "x * 2", "s0": "8, 3"},
        {"fn": "batched_dot", "pn": "64"},
        {},
    ):
        s = Scenario.from_texts(texts, TEST_DEVICES)
        schema = scenarios.schema(TEST_DEVICES)
        query = schema.to_query(s.texts())
        assert query == s.query()
        back, notes = schema.from_query(query)
        assert not notes and Scenario.from_texts(back, TEST_DEVICES).query() == query


def _present(present):
    import streamlit as st

    from pmapviz.core.ui import url_state

    st.session_state["present"] = present
    url_state.set_url({"step": "2"})


def test_set_url_keeps_presenter_mode():
    assert dict(render(_present, True).query_params) == {"step": "2", "present": "1"}
    assert dict(render(_present, False).query_params) == {"step": "2"}


def _parsed(n):
    import streamlit as st

    from pmapviz.core.ui import url_state
    from pmapviz.features.collectives import collectivechoices

    url_state.load("co_", collectivechoices.schema(n))
    st.session_state["co_m"] = "lots"
    st.markdown(repr(url_state.parsed("co_", collectivechoices.schema(n), ["n"])))
    url_state.parsed("co_", collectivechoices.schema(n), ["m"])
    st.write("not reached")


def test_parsed_values_are_typed_and_bad_text_stops_the_page_with_its_message():
    at = render(_parsed, TEST_DEVICES)
    assert at.markdown[0].value == repr({"n": TEST_DEVICES})
    assert len(at.error) == 1 and "lots" in at.error[0].value
    assert "not reached" not in [m.value for m in at.markdown]


def _scenario(n):
    import streamlit as st

    from pmapviz.core.ui import url_state

    st.markdown(repr(url_state.explorer_scenario(n).query()))


def test_the_explorers_scenario_comes_from_the_session_then_the_link():
    at = render(_scenario, TEST_DEVICES, query={"fn": "add", "s0": "zzz"})
    assert any("zzz" in w.value for w in at.warning)  # a bad shape: its default, with a note
    at = render(
        _scenario, TEST_DEVICES, query={"fn": "add"}, state={"explorer_settings": {"fn": "sum_all"}}
    )
    assert "'fn': 'sum_all'" in at.markdown[0].value and not at.warning


def test_a_widget_value_streamlit_dropped_comes_back_as_last_kept_not_empty():
    at = render(_collectives_page, TEST_DEVICES, query={"c": "psum", "n": "4", "m": "3"})
    at.session_state["co_m"] = "5"
    at.run()  # save keeps m=5
    del at.session_state["co_m"]  # what Streamlit does after a run that did not draw the widget
    del at.session_state["co_n"]
    at.run()
    assert at.session_state["co_m"] == "5" and at.session_state["co_n"] == "4"
    assert at.query_params["m"] == "5"


def _share(url_path):
    import streamlit as st

    from pmapviz.core.ui import url_state

    st.query_params.update(fn="add", present="1", follow="1")
    st.session_state[f"share_{url_path}"] = True  # the popover open
    url_state.share_link(url_path)


def test_a_share_link_names_this_view_without_the_sessions_own_keys_and_says_who_can_open_it():
    at = render(_share, "explorer")
    (link,) = [c.value for c in at.code]
    assert link.endswith("/explorer?fn=add")  # no presenter mode, no following
    (note,) = [w.value for w in at.warning]
    assert "Only this machine can open this link" in note and "0.0.0.0" in note


def test_a_share_link_uses_the_address_the_operator_gave_people():
    from streamlit import config

    config.set_option("browser.serverAddress", "pods.example")
    config.set_option("browser.serverPort", 8600)
    try:
        at = render(_share, "tour")
    finally:
        config._set_option("browser.serverAddress", "localhost", "<default>")
        config._set_option("browser.serverPort", 8501, "<default>")
    (link,) = [c.value for c in at.code]
    assert link == "http://pods.example:8600/tour?fn=add" and not at.warning
