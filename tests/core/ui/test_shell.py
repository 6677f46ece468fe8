"""The shell: every page runs inside app.py's router."""

import threading

import pytest
from streamlit.runtime.pages_manager import PagesManager

from pmapviz.core.ui import shell
from tests.core.ui.conftest import render, texts


class _Rerun(Exception):
    pass


def _rerun():
    raise _Rerun


def test_a_page_outside_app_py_reruns_whatever_streamlits_flag_says(monkeypatch):
    """Two share links opened at once on a fresh server both start in Streamlit's legacy pages/
    mode; the first clears the process-wide flag, so the second must not trust it."""
    monkeypatch.setattr(shell.st, "rerun", _rerun)
    for flag in (True, False, None):  # False: another session's page already cleared it
        monkeypatch.setattr(PagesManager, "uses_pages_directory", flag)
        with pytest.raises(_Rerun):
            shell.ensure_routed()
        assert PagesManager.uses_pages_directory is False  # the rerun goes through app.py
    with shell.routing():
        shell.ensure_routed()  # app.py's router is running this page: no rerun
        seen = []

        def elsewhere():
            try:
                shell.ensure_routed()
            except _Rerun:
                seen.append("rerun")

        other = threading.Thread(target=elsewhere)
        other.start()
        other.join()
        assert seen == ["rerun"]  # another session's thread is not routed by this one
    with pytest.raises(_Rerun):
        shell.ensure_routed()  # the mark ends with the page


def _failing(inside_fragment):
    import streamlit as st

    from pmapviz.core.ui import shell

    @shell.fragment
    def part():
        raise RuntimeError("/secret/path/of/the/server")

    if inside_fragment:
        part()
    else:
        try:
            raise KeyError("x")
        except KeyError as err:
            shell.page_failed(err)
    st.markdown("the page goes on")


def test_an_unforeseen_error_is_one_clear_line_and_its_type_never_a_traceback():
    for inside, kind in ((True, "RuntimeError"), (False, "KeyError")):
        at = render(_failing, inside)
        assert not at.exception
        assert "unexpected problem" in at.error[0].value and at.code[0].value == kind
        assert "secret" not in texts(at) and at.markdown[-1].value == "the page goes on"


def _fragment_writing(link: dict, fail: bool, calls: list):
    import streamlit as st

    from pmapviz.core.ui import shell

    shell.on_link_written("test", lambda: calls.append(dict(st.query_params)))

    @shell.fragment
    def part():
        st.query_params.from_dict(link)
        if fail:
            raise RuntimeError("broke after writing")

    part()


@pytest.mark.parametrize(
    ("link", "fail", "heard"),
    [
        ({"s0": "4,6"}, False, [{"s0": "4,6"}]),  # a new link: the hook hears it, as written
        ({"s0": "4,5"}, False, []),  # the link it started with: nothing new
        ({"s0": "4,7"}, True, []),  # a fragment that failed wrote nothing anyone follows
    ],
)
def test_a_page_fragment_that_writes_a_new_link_calls_the_hooks_once(
    monkeypatch, link, fail, heard
):
    """An edit that reruns only a page's fragment skips app.py's after-page step: the room's
    leader publishes it from here (pmapviz.app.ui.room_panel._lead_from_fragment)."""
    monkeypatch.setattr(shell, "_LINK_WRITTEN", {})
    calls: list = []
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_fragment_writing, args=(link, fail, calls))
    at.query_params["s0"] = "4,5"
    at.run()
    assert calls == heard
    assert list(shell._LINK_WRITTEN) == ["test"]  # registering again replaces, never adds
