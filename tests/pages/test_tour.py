"""AppTest for every step of the guided tour, its URL state and navigation."""

from urllib.parse import parse_qsl

import pytest

from pmapviz.core.base.pageinfo import page_file
from tests.conftest import TEST_DEVICES
from tests.pages.conftest import all_text, open_link

PAGE = page_file("tour")
N = TEST_DEVICES

EXPECT = {
    1: ["fixed for the whole process", "--devices 4"],
    2: ["SPMD", "x * 2"],
    3: [f"({N}, 10_000) -> reshape -> ({N * 10_000:_},)", "**True**"],
    4: ["pmapviz, from the shapes alone", f"has {N + 1} elements but there are {N} devices"],
    5: ["`in_axes` says which axis", "Explorer: mapped axis 1, out_axes=1"],
    6: ["lax.psum(jnp.sum(x), 'i')", "lax.ppermute"],
    7: ["replicas identical at every step: **True**"],
    8: ["local", "Launch 2 processes"],
    9: ["sublinear"],
    10: ["maintenance mode", "max diff 0", "When to use which"],
}


@pytest.mark.parametrize("step", sorted(EXPECT))
def test_each_step_by_link(run_app, step):
    at = run_app(page=PAGE, query={"step": str(step)})
    assert not at.exception, [e.value for e in at.exception]
    text = all_text(at) + " ".join(b.label for b in at.button)
    for words in EXPECT[step]:
        assert words in text, (step, words)
    assert at.query_params["step"] == str(step)
    if step == 5:
        assert list(at.dataframe[0].value["result"]) == [f"({N}, 4, 2)", f"({N}, 3)", f"(3, {N})"]
    assert at.get("page_link")  # every step links to the full page


@pytest.mark.parametrize("present", ["0", "1"])
def test_step_4_folds_jaxs_own_error_after_the_explanation_and_the_picture_stays_up(
    monkeypatch, present
):
    """The question, pmapviz's explanation and its fix, then JAX's own words, collapsed; with
    presenter mode on, the picture comes right after the problem, before JAX's words."""
    at = open_link(monkeypatch, PAGE, {"step": "4", "present": present})
    assert not at.exception, [e.value for e in at.exception]
    (box,) = [e for e in at.expander if e.label.startswith("What JAX itself says")]
    assert box.label == "What JAX itself says: IndivisibleError" and not box.proto.expanded
    (code,) = box.code
    assert f"partitioned {N} times, but the dimension size is {N + 1}" in code.value
    order = []
    for child in _walk(at.main):
        if child.type == "warning":
            order.append("lesson")
        elif child.type == "markdown" and child.value.startswith("**Fix:**"):
            order.append("fix")
        elif child.type == "expander" and child.label == box.label:
            order.append("jax")
        elif child.type == "html" and 'role="img"' in child.proto.body:
            order += ["picture"] * ("picture" not in order)
    want = ["lesson", "picture", "fix", "jax"] if present == "1" else ["lesson", "fix", "jax"]
    assert [o for o in order if o in want] == want, order


def _walk(node):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _walk(child)


@pytest.mark.parametrize("present", ["0", "1"])
def test_a_steps_links_open_their_page_in_this_tab_and_keep_presenter_mode(monkeypatch, present):
    """A step's links open their page in this tab and session, with the link's settings and
    presenter mode as it is (a new tab without present=1 brought the sidebar back on a
    projector)."""
    at = open_link(monkeypatch, PAGE, {"step": "3", "present": present})
    links = [e.proto for e in at.get("page_link") if e.proto.label.startswith("Explorer with")]
    (seed,) = links
    query = dict(parse_qsl(seed.query_string))
    assert not seed.external and seed.page == "explorer" and query["fn"] == "batched_dot"
    assert query.get("present") == ("1" if present == "1" else None)


def test_next_and_previous_keep_the_url(run_app):
    at = run_app(page=PAGE)
    at.button(key="tour_next").click().run()
    assert at.query_params["step"] == "2" and "pmap basics" in all_text(at)
    at.button(key="tour_prev").click().run()
    assert at.query_params["step"] == "1"
    assert at.button(key="tour_prev").disabled


def test_bad_step_in_link(run_app):
    at = run_app(page=PAGE, query={"step": "99"})
    assert not at.exception and at.warning and at.query_params["step"] == "1"


def test_live_demos_behind_buttons(run_app):
    at = run_app(page=PAGE, query={"step": "9"})
    at.button(key="tour_time").click().run(timeout=120)
    assert not at.exception and len(at.dataframe[0].value) == 3  # pmap x1, pmap xN, vmap
    at = run_app(page=PAGE, query={"step": "8"})
    at.button(key="tour_cluster").click().run(timeout=120)
    assert not at.exception
    assert list(at.dataframe[0].value["psum"]) == [3.0, 3.0]
