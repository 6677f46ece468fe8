"""AppTest for the data-parallel training page."""

import pytest

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.pods import podtopology
from tests.conftest import TEST_DEVICES
from tests.pages.conftest import all_text

PAGE = page_file("training")


def test_train_and_see_the_proof(run_app):
    at = run_app(page=PAGE, query={"steps": "40"})
    assert not at.exception
    at.button(key="tr_go").click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m for m in at.metric}
    assert metrics["Max difference between replicas"].value == "0"
    assert "identical" in all_text(at)
    grid = next(m.value for m in at.markdown if "after pmean" in m.value)
    for d in range(TEST_DEVICES):
        assert f"cpu:{d}" in grid
    assert len(at.get("plotly_chart")) >= 1
    assert any("match one-device training" in s.value or "exactly" in s.value for s in at.success)


def test_a_batch_that_does_not_split_gets_the_nearest_valid_sizes(run_app):
    at = run_app(page=PAGE, query={"batch": "100"})
    assert not at.exception
    assert any("Use 96 or 104" in e.value for e in at.error), [e.value for e in at.error]


@pytest.mark.parametrize(
    "query, words",
    [
        ({"batch": "abc"}, "not a whole number"),
        ({"lr": "nan"}, "not a number"),
        ({"steps": "999999"}, "nearest valid: 2,000"),
        ({"lr": "1e309"}, "out of range"),
        ({"batch": str(2**64)}, "nearest valid: 65,536"),
        ({"steps": "¹"}, "digits 0-9 only"),
    ],
)
def test_a_bad_link_value_falls_back_to_the_default(run_app, query, words):
    at = run_app(page=PAGE, query=query)
    assert not at.exception
    notes = [w.value for w in at.warning]
    assert any(words in w and "Using the default" in w for w in notes), notes
    assert not at.error


@pytest.mark.parametrize(
    "key, typed, words",
    [
        ("batch", "abc", "not a whole number"),
        ("lr", "nan", "not a number"),
        ("steps", "999999", "nearest valid: 2,000"),
        ("lr", "1e309", "out of range"),
        ("batch", "9999999", "nearest valid: 65,536"),
        ("steps", "²", "digits 0-9 only"),
    ],
)
def test_typed_bad_settings_are_explained(run_app, key, typed, words):
    at = run_app(page=PAGE)
    at.text_input(key=f"tr_{key}").input(typed).run()
    assert not at.exception
    assert any(words in e.value for e in at.error), [e.value for e in at.error]


def test_divergence_is_reported(run_app):
    at = run_app(page=PAGE, query={"lr": "5", "steps": "100", "batch": "64"})
    at.button(key="tr_go").click().run(timeout=300)
    assert not at.exception
    assert any("diverged" in e.value for e in at.error)


def test_time_per_step(run_app):
    at = run_app(page=PAGE, query={"steps": "5"})
    at.button(key="tr_go").click().run(timeout=300)
    at.button(key="tr_time").click().run(timeout=300)
    assert not at.exception
    assert len(at.get("plotly_chart")) == 2


# libtpu takes a lockfile per machine: the suite's other workers (and a running server) load it too
SHARED_LIBTPU = {"ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}


@pytest.mark.skipif(
    not podtopology.availability().ok, reason="compiling for a TPU slice needs libtpu"
)
def test_one_step_on_a_tpu_slice_is_compiled_not_trained(run_app):
    at = run_app(
        page=PAGE, query={"model": "mlp", "red": "psum", "pod": "v5e:2x4"}, env=SHARED_LIBTPU
    )
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert "One step on a TPU slice" in [s.value for s in at.subheader]
    assert any("v5e:2x4: 8 chips on 2 hosts" in m.value for m in at.markdown)
    metrics = {m.label: m.value for m in at.metric}
    for label in ("Peak per device", "Compute + HBM", "Communication", "Collectives"):
        assert metrics[label], label
    assert "all-reduce" in list(at.dataframe[-1].value["kind"])
    assert "tr_hist" not in at.session_state and at.query_params["pod"] == "v5e:2x4"


@pytest.mark.skipif(
    not podtopology.availability().ok, reason="compiling for a TPU slice needs libtpu"
)
def test_one_step_on_two_slices_all_reduces_the_gradients_over_both(run_app):
    """Issue 66: the step on 2 x v5e:4x4 is the same pmap over all 32 devices: each keeps its
    local batch, the gradient's all-reduce is split between ICI and DCN by the compiler, and
    nothing is trained."""
    pod = "2 x v5e:4x4"
    query = {"model": "mlp", "red": "pmean", "batch": "64", "k": "2", "pod": pod}
    at = run_app(page=PAGE, query=query, env=SHARED_LIBTPU)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error and not [w for w in at.warning if "pod=" in w.value]
    assert "One step on 2 TPU slices" in [s.value for s in at.subheader]
    text = all_text(at)
    assert "This step with `devices=32`: each device keeps its 32 examples" in text
    assert "a global batch of 1,024" in text and "('dcn', 'batch') = 2 x 16" in text
    table = at.dataframe[-1].value
    assert {"all-reduce", "send", "recv"} <= set(table["kind"]) and "DCN (between slices)" in set(
        table["network"]
    )
    assert "tr_hist" not in at.session_state and at.query_params["pod"] == pod


def test_a_hostile_slice_count_in_the_link_is_one_line_and_no_compile(run_app):
    at = run_app(page=PAGE, query={"model": "mlp", "red": "psum", "pod": "99x v5e:16x16"})
    assert not at.exception and not at.error
    (said,) = [w.value for w in at.warning if "pod=" in w.value]
    assert "99 slices" in said and "Using the default" in said, said
    assert "One step on a TPU slice" not in [s.value for s in at.subheader] and not at.metric
