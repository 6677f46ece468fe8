"""The tour's steps: each demo runs on this process's devices and returns plain blocks; every
link it gives opens a page whose settings layer accepts all of its parameters."""

from urllib.parse import parse_qsl, urlparse

import pytest

from pmapviz import collectiveops, devicefacts, explorersettings, sweepplans, trainingrun
from pmapviz.cluster import cluster
from pmapviz.tour import tour
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES
FACTS = devicefacts.facts()
CTX = tour.Context(
    N, tuple(f"cpu:{d}" for d in range(N)), FACTS, "streamlit run app.py -- --devices 4"
)
SCHEMAS = {
    "explorer": explorersettings.schema(N),
    "collectives": collectiveops.schema(N),
    "training": trainingrun.schema(N),
    "cluster": cluster.schema(),
    "timing": sweepplans.schema(N),
    "live": explorersettings.schema(N),
}


@pytest.mark.parametrize("k", range(len(tour.STEPS)), ids=[s.title for s in tour.STEPS])
def test_every_step_gives_blocks_and_links_that_pages_accept(k):
    blocks = tour.STEPS[k].demo(CTX)
    kinds = {b.kind for b in blocks}
    assert kinds <= {
        "markdown",
        "code",
        "lesson",
        "info",
        "table",
        "grid",
        "chips",
        "link",
        "cards",
    }
    assert any(b.picture for b in blocks), "every step shows a picture, not only prose"
    links = [b for b in blocks if b.kind == "link"]
    assert links, "every step links to the full page"
    for b in links:
        url = urlparse(b.extra)
        page = url.path.strip("/") or "home"
        query = dict(parse_qsl(url.query))
        if page in SCHEMAS:
            _, notes = SCHEMAS[page].from_query(query)
            assert not notes, (b.extra, notes)
            assert set(query) <= {f.key for f in SCHEMAS[page].fields}
        else:
            assert page == "home" and not query


def test_step_4_shows_jax_error_and_the_planner_message():
    blocks = tour.step_too_many(CTX)
    code = next(b for b in blocks if b.kind == "code")
    assert "Error" in code.body  # JAX's own, cryptic message
    err = next(b for b in blocks if b.kind == "lesson")
    assert f"has {N + 1} elements but there are {N} devices" in err.body


def test_step_5_results_come_from_the_planner():
    table = next(b for b in tour.step_axes(CTX) if b.kind == "table").body
    assert [r["result"] for r in table] == [f"({N}, 4, 2)", f"({N}, 3)", f"(3, {N})"]


def test_step_9_times_a_size_that_any_count_divides():
    ctx3 = tour.Context(3, ("cpu:0", "cpu:1", "cpu:2"), FACTS, "")
    rows = tour.time_one_and_all(ctx3.n)  # 2**20 does not split over 3 devices; this does
    assert {(r["impl"], r["devices"]) for r in rows} == {("pmap", 1), ("pmap", 3), ("vmap", 1)}
    assert all(r["compute (ms, median)"] > 0 for r in rows)
