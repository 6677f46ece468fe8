"""Results stay with the room (issue 65): the presenter's live run of the seed's 10M pairs is
computed once, and a follower who lands on that step sees it, labelled as the presenter's,
without pressing Run."""

from pmapviz.app.ui import room_panel
from pmapviz.core.base import room
from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.planning import seedpairs
from pmapviz.core.running import pmaprun, sharedresults
from tests.conftest import TEST_DEVICES
from tests.pages.conftest import all_text, open_link

N = TEST_DEVICES


def _counted(monkeypatch) -> list:
    """Every real live run (pmaprun's own work, not stubbed), counted."""
    calls, real = [], pmaprun._run_plan

    def counted(*args, **kwargs):
        calls.append(args[1].key)
        return real(*args, **kwargs)

    monkeypatch.setattr(pmaprun, "_run_plan", counted)
    return calls


def _run_buttons(at) -> list:
    return [b for b in at.button if b.label.startswith("Run (")]


def test_a_follower_sees_the_presenters_10m_run_without_pressing_run(run_app, monkeypatch):
    the = room.Room(room.new_key())
    monkeypatch.setattr(room, "_ROOM", [the])
    monkeypatch.setattr(room, "LEADER_SILENCE_S", 3600.0)
    calls = _counted(monkeypatch)
    split = seedpairs.split(N)
    blocked = ", ".join(str(d) for d in split.blocked)  # the seed's 10M pairs, reshaped
    leader = run_app()
    leader.sidebar.text_input(key="room_typed").set_value(the.key).run()
    leader.sidebar.button(key="room_lead").click().run()
    for k, v in {"fn": "batched_dot", "s0": blocked, "s1": blocked}.items():
        leader.query_params[k] = v
    leader.switch_page(page_file("live")).run()
    assert any("press Run" in i.value for i in leader.info) and not calls  # large: waits
    _run_buttons(leader)[0].click().run()
    assert not leader.exception and len(calls) == 1
    assert "PASS" in [m.value for m in leader.metric]
    assert "Your run, computed at" in all_text(leader)
    assert the.latest()[1].page == "live"

    follower = open_link(monkeypatch, None, {"follow": "1"})  # lands on the presenter's step
    assert not follower.exception
    assert follower.session_state[room_panel.PAGE] == "live"
    assert not _run_buttons(follower) and not any("press Run" in i.value for i in follower.info)
    text = all_text(follower)
    assert "The presenter's run of these settings, shared: computed once at" in text
    assert "PASS" in [m.value for m in follower.metric]
    assert f"({N}, {split.used // N:_}) -> ({split.used:_},)" in text  # all 10M pairs
    assert len(calls) == 1 and sharedresults.shared().computed == 1  # computed once
    assert sharedresults.shared().served >= 1


def test_other_settings_run_their_own_computation(run_app, monkeypatch):
    calls = _counted(monkeypatch)
    small = {"fn": "batched_dot", "s0": f"{N}, 50, 3", "s1": f"{N}, 50, 3"}
    first = run_app(page=page_file("live"), query=small)
    assert len(calls) == 1 and "Your run" in all_text(first)
    again = run_app(page=page_file("live"), query=small)  # another session, the same settings
    assert len(calls) == 1 and "Another session's run of these settings, shared" in all_text(again)
    again.radio(key="live_kind").set_value("ones").run()  # its own values: its own run
    assert len(calls) == 2 and "Your run" in all_text(again)
    assert "PASS" in [m.value for m in again.metric]
