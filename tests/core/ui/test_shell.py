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
