"""``pmapviz.exercise`` in a notebook: the tour's exercises on this process's devices, an
attempt judged as the pages judge it (never counted for a room), the worked answer on request;
bad names are one clear ValueError, and whatever was typed is escaped."""

import pytest

import pmapviz
from pmapviz.features.exercises import exercisebook, tally
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_every_exercise_listed_with_its_step():
    view = pmapviz.exercise()
    rows = view.to_dict()["rows"]
    assert [r["exercise"] for r in rows] == list(exercisebook.BY_KEY)
    assert view.title == f"The tour's {len(rows)} exercises on {N} device(s)"
    assert "fit-devices (tour step 4)" in str(view)


def test_an_attempt_is_judged_with_jaxs_words_and_not_counted():
    before = tally.tally().summary("fit-devices").working
    view = pmapviz.exercise("fit-devices", shape=f"{N + 2}, 3")
    assert view.title.endswith("not yet") and view.to_dict()["solved"] is False
    assert view.to_dict()["kind"] == f"IndivisibleError (mapped axis {N + 2} > {N} devices)"
    assert "What JAX itself says" in view.html() and "IndivisibleError" in str(view)
    assert pmapviz.exercise("fit-devices", shape="5, 2, 3").to_dict()["solved"] is True
    assert tally.tally().summary("fit-devices").working == before


def test_the_worked_answer_on_request_and_typed_text_escaped():
    view = pmapviz.exercise("block-spec", answer=True)
    assert view.to_dict()["answer"] == {"spec": "P(None, 'i')"} and "(4, 2)" in str(view)
    assert "answer" not in pmapviz.exercise("block-spec").to_dict()
    hostile = pmapviz.exercise("block-spec", spec="<img src=x onerror=alert(1)>")
    assert "<img" not in hostile.html() and "&lt;img" in hostile.html()


@pytest.mark.parametrize(
    "args, kwargs, says",
    [
        (("nope",), {}, "No exercise `nope`"),
        (("fit-devices",), {"shap": "1"}, "has no setting `shap`"),
    ],
)
def test_bad_names_are_one_clear_valueerror(args, kwargs, says):
    with pytest.raises(ValueError, match=says):
        pmapviz.exercise(*args, **kwargs)


def test_an_exercise_that_needs_more_devices_says_so_in_the_notebook():
    from pmapviz.features.exercises import showexercise

    ring = exercisebook.BY_KEY["ring-shift"]
    alone = showexercise.view(ring, 1, None, {}, answer=True)
    assert ring.missing(1) in str(alone) and "Worked answer" in str(alone)
    judged = exercisebook.judge(ring, ring.answer(1), 1)
    tried = showexercise.view(ring, 1, judged, ring.answer(1), answer=False)
    assert tried.title.endswith(": not checked") and ring.missing(1) in str(tried)
    assert tried.to_dict()["solved"] is False and "Not yet" not in str(tried)
