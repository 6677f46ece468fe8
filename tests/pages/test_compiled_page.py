"""AppTest for the Compiled program page: what XLA emitted, read from real compilations."""

import pytest

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.pods import podtopology
from tests.conftest import TEST_DEVICES
from tests.pages.conftest import all_text

PAGE = page_file("compiled")
N = TEST_DEVICES


def test_psum_with_groups_shows_the_all_reduce_and_its_groups(run_app):
    at = run_app(page=PAGE, query={"src": "collective", "c": "psum", "g": "0 1 | 2 3 4 5 6 7"})
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert list(table["collective"]) == ["all-reduce"]
    assert table["groups / pairs"][0] == "[[0, 1], [2, 3, 4, 5, 6, 7]]"  # as the user asked
    assert "replica groups" in all_text(at)
    variants = at.dataframe[1].value
    assert len(variants) == 4 and "pmap" in variants["variant"][0]


def test_ppermute_pairs_are_read_back_and_a_trace_has_one_lane_per_device(run_app):
    at = run_app(page=PAGE, query={"src": "collective", "c": "ppermute", "pairs": "0->1, 1->5"})
    assert not at.exception
    assert at.dataframe[0].value["groups / pairs"][0] == "[[0, 1], [1, 5]]"
    at.button(key="cp_trace").click().run(timeout=120)
    assert not at.exception
    fig = at.get("plotly_chart")[-1].proto.spec
    assert all(f'"y":["cpu:{d}"' in fig for d in range(N))  # one lane per device
    assert "collective-permute" in fig


def test_explorer_settings_and_the_training_step_compile(run_app):
    at = run_app(
        page=PAGE,
        query={"src": "explorer", "fn": "normalise", "s0": f"{N}, 4", "a0": "0", "name": "i"},
    )
    assert not at.exception
    assert "all-reduce" in list(at.dataframe[0].value["collective"])
    at = run_app(page=PAGE, query={"src": "training"})
    assert not at.exception and "all-reduce" in list(at.dataframe[0].value["collective"])


@pytest.mark.parametrize(
    "query, words",
    [
        ({"src": "collective", "c": "psum", "g": "0 1 | 9"}, "outside"),
        ({"src": "nope"}, "Using the default"),
    ],
)
def test_bad_settings_are_explained(run_app, query, words):
    at = run_app(page=PAGE, query=query)
    assert not at.exception
    assert any(words in m.value for m in [*at.error, *at.warning])


def test_explorer_and_collectives_have_a_compiled_view(run_app):
    at = run_app(
        page=page_file("explorer"),
        query={"fn": "normalise", "s0": f"{N}, 4", "a0": "0", "name": "i"},
    )
    assert "ex_xla" not in [t.key for t in at.toggle]  # lazy: drawn when its tab opens
    at.session_state["ex_code_open"] = True
    at.session_state["ex_code"] = "What XLA compiles"
    at.run()
    at.toggle(key="ex_xla").set_value(True).run()
    assert not at.exception and "all-reduce" in list(at.dataframe[-2].value["collective"])
    at = run_app(page=page_file("collectives"), query={"c": "all_gather", "n": "4", "m": "2"})
    at.toggle(key="co_xla").set_value(True).run()
    assert not at.exception and "all-gather" in list(at.dataframe[-2].value["collective"])


# libtpu takes a lockfile per machine: the suite's other workers (and a running server) load it too
SHARED_LIBTPU = {"ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}


needs_libtpu = pytest.mark.skipif(
    not podtopology.availability().ok, reason="compiling for a TPU slice needs libtpu"
)


@needs_libtpu
def test_a_tpu_slice_in_the_link_compiles_the_chosen_collective_for_it(run_app):
    at = run_app(
        page=PAGE, query={"src": "collective", "c": "psum", "pod": "v5e:2x4"}, env=SHARED_LIBTPU
    )
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="cp_pod").value == "v5e:2x4"
    assert any("v5e:2x4: 8 chips on 2 hosts" in m.value for m in at.markdown)
    metrics = {m.label: m.value for m in at.metric}
    for label in ("Peak per device", "Compute + HBM", "Communication", "Collectives"):
        assert metrics[label], label
    assert "all-reduce" in list(at.dataframe[-1].value["kind"])
    assert "The collectives XLA emitted" not in [s.value for s in at.subheader]  # instead of
    assert at.query_params["pod"] == "v5e:2x4"


def test_a_bad_slice_in_the_link_is_said_and_this_machine_used(run_app):
    at = run_app(page=PAGE, query={"src": "collective", "c": "psum", "pod": "v9:1x1"})
    assert not at.exception
    assert any("pod= `v9`" in w.value and "Using the default" in w.value for w in at.warning)
    assert at.selectbox(key="cp_pod").value == ""
    assert "The collectives XLA emitted" in [s.value for s in at.subheader]
    assert "pod" not in at.query_params and not at.metric


@needs_libtpu
def test_two_slices_in_the_link_compile_the_pmap_over_both_with_each_collectives_network(run_app):
    """Issue 66: the page's jax.pmap on 2 x v5e:2x4 runs over all 16 devices, slice by slice;
    the psum's all-reduce is split by the compiler (ICI inside each slice, the send/recv between
    them over DCN), and the note says what that program is on a ('dcn', 'i') mesh."""
    pod = "2 x v5e:2x4"
    at = run_app(page=PAGE, query={"src": "collective", "c": "psum", "pod": pod}, env=SHARED_LIBTPU)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error and not [w for w in at.warning if "pod=" in w.value]
    assert at.selectbox(key="cp_pod").value == pod and at.query_params["pod"] == pod
    heads = [s.value for s in at.subheader]
    assert "Compiled for 2 x TPU v5e 2x4 (16 chips in 2 slices over the data-center network)" in (
        heads
    )
    text = all_text(at)
    assert "runs over all 2 slices, so the compiler splits each" in text
    assert "('dcn', 'i') = 2 x 8" in text  # the note, from the lowered program
    table = at.dataframe[-1].value
    assert {"all-reduce", "send", "recv"} <= set(table["kind"]), list(table["kind"])
    assert set(table["network"]) == {"ICI (inside each slice)", "DCN (between slices)"}


@needs_libtpu
@pytest.mark.parametrize("src", ["explorer", "training"])
def test_the_explorers_plan_and_the_training_step_compile_over_two_slices(run_app, src):
    """The page's other programs on 2 x v5e:2x4: the same pmap over both slices, a DCN
    transfer among their collectives, the mesh note, no error."""
    at = run_app(page=PAGE, query={"src": src, "pod": "2 x v5e:2x4"}, env=SHARED_LIBTPU)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert "('dcn', " in all_text(at) and " = 2 x 8" in all_text(at)
    if src == "training":  # the explorer's default plan has no collective
        assert "DCN (between slices)" in set(at.dataframe[-1].value["network"])


def test_a_hostile_slice_count_in_the_link_is_one_line_and_this_machine_used(run_app):
    """A slice count past the largest (99) is one warning that says it; the page runs here."""
    at = run_app(page=PAGE, query={"src": "collective", "c": "psum", "pod": "99x v5e:16x16"})
    assert not at.exception and not at.error
    (said,) = [w.value for w in at.warning if "pod=" in w.value]
    assert "99 slices" in said and "Using the default" in said, said
    assert at.selectbox(key="cp_pod").value == "" and not at.metric
    assert "The collectives XLA emitted" in [s.value for s in at.subheader]
