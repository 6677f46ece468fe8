"""The device-set picker: each page's default set on a two-set server (a TPU chip beside the
emulated CPU devices), the person's choice held across pages, ``?on=`` links through the
settings layer, and switching that opens the pages afresh."""

import html

from pmapviz.core.devices import deviceset
from tests import fakes
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render, texts


def _page(runs_on: str):
    """A page's first lines: which set it runs on, the picker, and a setting of its own."""
    import streamlit as st

    from pmapviz.core.base import settings
    from pmapviz.core.ui import device_sets, url_state

    name = device_sets.current(runs_on)
    device_sets.picker(name)
    url_state.load("pg_", settings.Schema((settings.int_field("n", "n", 1, 9, 3),)))
    st.text_input("n", key="pg_n")
    st.markdown(f"runs on: {name}")


def _runs_on(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("runs on:")).split(": ")[1]


def test_on_one_tpu_chip_lessons_start_on_the_emulated_set_and_timing_on_the_chip():
    """One real chip and TEST_DEVICES emulated CPU devices: a lesson about splitting work
    wants the larger set, the Timing lab wants the machine's own chip."""
    with fakes.fake_devices("tpu", 1):
        many, real = render(_page, "many"), render(_page, "real")
    assert TEST_DEVICES > 1
    assert _runs_on(many) == "cpu" and _runs_on(real) == "tpu"
    picker = many.get("button_group")[0]
    assert picker.value == "cpu"
    assert picker.options == ["1 TPU v5 lite device", f"{TEST_DEVICES} emulated CPU devices"]
    assert real.get("button_group")[0].value == "tpu"


def test_eight_chips_win_a_lesson_over_the_same_number_of_emulated_devices():
    with fakes.fake_devices("tpu", TEST_DEVICES):
        assert _runs_on(render(_page, "many")) == "tpu"


def test_a_one_set_server_shows_no_picker():
    at = render(_page, "many")
    assert not at.get("button_group") and _runs_on(at) == deviceset.real()


def test_a_link_picks_the_set_and_the_choice_holds_for_the_next_page():
    with fakes.fake_devices("tpu", 1):
        at = render(_page, "real", query={"on": "cpu"})
        assert _runs_on(at) == "cpu"
        at.run()  # another page would read the same session choice
        assert _runs_on(at) == "cpu"


def test_a_set_this_server_lacks_keeps_the_default_with_a_note_in_plain_text():
    bad = "![x](http://example.invalid/a.png)"
    with fakes.fake_devices("tpu", 1):
        at = render(_page, "real", query={"on": bad})
    assert _runs_on(at) == "tpu"
    note = at.warning[0].value
    assert "is not a device set here" in note and "tpu, cpu" in note
    assert bad not in texts(at).replace(note, "")  # shown only inside the escaped note
    assert "example.invalid" not in html.unescape(str(at.get("markdown")))


def test_gpu_link_on_a_tpu_server_names_what_it_has():
    with fakes.fake_devices("tpu", 1):
        at = render(_page, "real", query={"on": "gpu"})
    assert "`gpu` is not a device set here" in at.warning[0].value


def test_switching_sets_opens_the_pages_afresh():
    """Settings made for 8 devices would not fit 1: a switch forgets every page's settings
    (not presenter mode) and the next run draws the defaults for the other set."""
    with fakes.fake_devices("tpu", 1):
        at = render(_page, "real", state={"present": True})
        at.text_input(key="pg_n").set_value("7").run()
        assert at.text_input(key="pg_n").value == "7"
        at.get("button_group")[0].set_value("cpu").run()
        assert _runs_on(at) == "cpu"
        assert at.text_input(key="pg_n").value == "3"
        assert at.session_state["present"] is True
