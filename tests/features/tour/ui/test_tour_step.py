"""A tour step's blocks, drawn in order (pictures first in presenter mode), and its demo."""

from pmapviz.core.ui.shell import device_report
from pmapviz.features.tour import tourblocks, tourruns, toursteps
from pmapviz.features.tour.ui import tour_step
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render

BLOCKS = [
    tourblocks.TourBlock("markdown", "Some words."),
    tourblocks.TourBlock("code", "x = 1", "python"),
    tourblocks.TourBlock("info", "A note."),
    tourblocks.TourBlock("table", [{"a": 1}]),
    tourblocks.TourBlock("grid", [("row", [("1", 0, "one")])], "one cell"),
    tourblocks.TourBlock("chips", None),
    tourblocks.TourBlock(
        "cards", {"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"}, "The arrays"
    ),
]


def _blocks(blocks, present):
    import streamlit as st

    from pmapviz.core.ui.shell import device_report
    from pmapviz.features.tour.ui import tour_step

    st.session_state["present"] = present
    tour_step.show(blocks, device_report())


def test_every_kind_of_block_is_drawn_in_order():
    at = render(_blocks, BLOCKS, False)
    assert not at.exception
    values = [m.value for m in at.markdown]
    assert values[0] == "Some words." and "role='img'" in values[1]
    assert "aria-label='The 8 devices" in values[2]
    assert at.code[0].value == "x = 1" and at.info[0].value == "A note."
    assert len(at.dataframe) == 1 and "The arrays" in at.get("html")[0].proto.body


def test_a_folded_code_block_is_collapsed_under_its_label_and_never_rendered_as_markdown():
    """JAX's own error may quote a user's names: it is drawn as code, inside a collapsed
    expander, after the words that explain it."""
    said = "ValueError: **not bold** <b>x</b> `y`"
    folded = tourblocks.TourBlock("folded_code", ("What the call raises:", said), "JAX says")
    at = render(_blocks, [tourblocks.TourBlock("markdown", "First."), folded], False)
    assert not at.exception
    (box,) = at.expander
    assert box.label == "JAX says" and not box.proto.expanded
    assert [c.value for c in box.code] == [said] and box.caption[0].value == "What the call raises:"
    assert at.markdown[0].value == "First." and all(said not in m.value for m in at.markdown)


def test_presenting_the_pictures_come_before_the_words():
    at = render(_blocks, BLOCKS, True)
    values = [m.value for m in at.markdown]
    assert "role='img'" in values[0] and values[-1] == "Some words."


def test_presenting_a_steps_problem_comes_before_its_pictures():
    problem = tourblocks.TourBlock("markdown", "The problem.", problem=True)
    at = render(_blocks, [*BLOCKS, problem], True)
    values = [m.value for m in at.markdown]
    assert values[0] == "The problem." and "role='img'" in values[1]
    assert values[-1] == "Some words."


def test_each_steps_demo_is_made_by_the_core_for_this_server():
    report = device_report()
    ctx = tourblocks.Context(report.count, tuple(report.labels), report.facts, "restart")
    assert tour_step.demo(1, ctx) == toursteps.STEPS[0].demo(ctx)


def test_a_step_measured_later_is_not_kept_unmeasured(monkeypatch):
    """Step 9 behind other benchmarks shows the devices and says so; the next visit measures
    (a failed measurement is never what the cache keeps)."""
    from pmapviz.core.base import queues

    report = device_report()
    ctx = tourblocks.Context(report.count, tuple(report.labels), report.facts, "restart-9")
    rows = [
        {"impl": "pmap", "devices": 1, "compute (ms, median)": 1.0},
        {"impl": "pmap", "devices": report.count, "compute (ms, median)": 0.5},
        {"impl": "vmap", "devices": 1, "compute (ms, median)": 2.0},
    ]
    answers = [queues.WaitTimeout("another benchmark holds the turn", 1, 2.0), rows]

    def time_one_and_all(n, on_wait=None, queue_timeout=None):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(tourruns, "time_one_and_all", time_one_and_all)
    first = tour_step.demo(9, ctx)
    assert [b.kind for b in first][:3] == ["markdown", "chips", "info"]
    assert "another benchmark holds the turn" in first[2].body
    second = tour_step.demo(9, ctx)
    assert second[1].kind == "grid" and "measured at" in second[1].extra
    assert tour_step.demo(9, ctx) == second and not answers  # now kept
