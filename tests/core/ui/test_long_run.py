"""A stoppable long run keeps what it finished: recover, start, keep, finish."""

from tests.core.ui.conftest import render


def _page(step):
    import types

    import streamlit as st

    from pmapviz.core.ui.long_run import LongRun

    run = LongRun("t_", "t_result", "stopped", "Stopped; what finished is kept.", ":material/stop:")
    run.recover()
    if step == "start":
        run.start(types.SimpleNamespace(done=1, stopped=False))
        run.keep(types.SimpleNamespace(done=2, stopped=False))
    elif step == "finish":
        run.start()
        run.finish(types.SimpleNamespace(done=3, stopped=False))
    st.write(str(st.session_state.get("t_result")))


def test_an_interrupted_run_is_kept_marked_with_a_note():
    at = render(_page, "start")  # the script "dies" here: running, with a partial result
    assert at.session_state["t_running"] and at.session_state["t_partial"].done == 2
    assert not at.warning
    again = render(
        _page, None, state={"t_running": True, "t_partial": at.session_state["t_partial"]}
    )
    kept = again.session_state["t_result"]
    assert kept.done == 2 and kept.stopped and not again.session_state["t_running"]
    assert again.warning[0].value == "Stopped; what finished is kept."


def test_a_finished_run_is_the_result_and_no_note():
    at = render(_page, "finish")
    assert at.session_state["t_result"].done == 3 and not at.session_state["t_result"].stopped
    assert not at.session_state["t_running"] and not at.warning
    quiet = render(_page, None)  # nothing ran: nothing to recover
    assert not quiet.warning and "t_result" not in quiet.session_state
