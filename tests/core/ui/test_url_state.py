"""A page's settings and its link: read through Schema.from_query, written through
Schema.to_query, the same keys and values both ways."""

import contextlib

import pytest

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


@contextlib.contextmanager
def server_options(values: dict):
    """Streamlit's options set as an operator sets them (``--server.address 0.0.0.0``), put
    back as they were afterwards (the process's config outlives a test)."""
    from streamlit import config

    saved = {k: (config.get_option(k), config.get_where_defined(k)) for k in values}
    try:
        for key, value in values.items():
            config.set_option(key, value)
        yield
    finally:
        for key, (value, where) in saved.items():
            config._set_option(key, value, where)


@pytest.fixture()
def network_ip(monkeypatch):
    """This machine's network address as Streamlit finds it (net_util), made one of the
    test's own: what the link must name when the server listens on every interface."""
    from streamlit import net_util

    monkeypatch.setattr(net_util, "get_internal_ip", lambda: "198.51.100.23")
    return "198.51.100.23"


LOOPBACK_ONLY = {"server.address": "127.0.0.1"}  # pmapviz's own default (serverconfig)


def test_a_share_link_names_this_view_without_the_sessions_own_keys_and_says_who_can_open_it():
    with server_options(LOOPBACK_ONLY):
        at = render(_share, "explorer")
    (link,) = [c.value for c in at.code]
    assert link.endswith("/explorer?fn=add")  # no presenter mode, no following
    (note,) = [w.value for w in at.warning]
    assert "Only this machine can open this link" in note and "0.0.0.0" in note


@pytest.mark.parametrize("address", ["0.0.0.0", "::", ""])
def test_a_server_on_every_interface_links_its_network_address_and_warns_of_nothing(
    network_ip, address
):
    """Issue 65: started with --server.address 0.0.0.0, the link named 127.0.0.1 (the address
    this browser used) and said only this machine could open it."""
    with server_options({"server.address": address, "server.port": 8600}):
        at = render(_share, "explorer")
    (link,) = [c.value for c in at.code]
    assert link == f"http://{network_ip}:8600/explorer?fn=add"
    assert not at.warning


def test_the_operators_address_comes_before_the_network_address(network_ip):
    values = {"server.address": "0.0.0.0", "browser.serverAddress": "pods.example"}
    with server_options(values | {"browser.serverPort": 443}):
        at = render(_share, "tour")
    assert [c.value for c in at.code] == ["http://pods.example/tour?fn=add"] and not at.warning


def test_a_machine_without_a_network_falls_back_to_the_browsers_address_without_a_warning(
    monkeypatch,
):
    """Every interface but no route out: Streamlit finds 127.0.0.1, which is no address for a
    room; the link keeps the one this browser used, and the server is not loopback-only."""
    from streamlit import net_util

    monkeypatch.setattr(net_util, "get_internal_ip", lambda: "127.0.0.1")
    with server_options({"server.address": "0.0.0.0"}):
        at = render(_share, "explorer")
    (link,) = [c.value for c in at.code]
    assert link.startswith("http://localhost/") and not at.warning  # AppTest: no Host header


@pytest.mark.parametrize(
    ("address", "host", "warned"),
    [
        ("127.0.0.1", "127.0.0.1:8501", True),
        ("localhost", "localhost:8501", True),
        ("::1", "[::1]:8501", True),
        ("127.0.0.1", "pods.example", False),  # a proxy on this machine, reached by its name
        ("0.0.0.0", "127.0.0.1:8501", False),  # this browser used loopback; the room need not
        ("192.0.2.7", "192.0.2.7:8501", False),  # one interface, not loopback
    ],
)
def test_the_loopback_warning_says_how_the_server_listens_not_how_this_browser_came(
    monkeypatch, network_ip, address, host, warned
):
    from pmapviz.core.ui import url_state

    context = type("C", (), {"headers": {"Host": host}, "url": f"http://{host}/"})
    monkeypatch.setattr(url_state.st, "context", context)
    with server_options({"server.address": address, "server.port": 8501}):
        assert url_state.only_this_machine() is warned
        link = url_state.base_url()
    assert link == (f"http://{network_ip}:8501" if address == "0.0.0.0" else f"http://{host}")


def test_a_base_url_path_and_https_are_kept(monkeypatch, network_ip):
    from pmapviz.core.ui import url_state

    context = type("C", (), {"headers": {"Host": "pods.example"}, "url": "https://pods.example/"})
    monkeypatch.setattr(url_state.st, "context", context)
    with server_options({"server.address": "127.0.0.1", "server.baseUrlPath": "/viz/"}):
        assert url_state.base_url() == "https://pods.example/viz"
    with server_options({"browser.serverAddress": "pods.example/room", "browser.serverPort": 80}):
        assert url_state.base_url() == "https://pods.example/room"


def test_a_share_link_uses_the_address_the_operator_gave_people():
    with server_options({"browser.serverAddress": "pods.example", "browser.serverPort": 8600}):
        at = render(_share, "tour")
    (link,) = [c.value for c in at.code]
    assert link == "http://pods.example:8600/tour?fn=add" and not at.warning
