"""The tour's steps: each demo runs on this process's devices and returns plain blocks; every
link it gives opens a page whose settings layer accepts all of its parameters."""

import math
from dataclasses import replace
from urllib.parse import parse_qsl, urlparse

import pytest

from pmapviz.core.devices import devicefacts
from pmapviz.core.drawing import gridhtml
from pmapviz.core.planning import scenarios, seedpairs
from pmapviz.features.cluster import clustersettings
from pmapviz.features.collectives import collectivechoices
from pmapviz.features.timing import sweepsetup
from pmapviz.features.tour import toursteps
from pmapviz.features.tour.tourblocks import Context
from pmapviz.features.training import trainingmodel
from pmapviz.features.types import typesettings
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES
FACTS = devicefacts.facts()
CTX = Context(N, tuple(f"cpu:{d}" for d in range(N)), FACTS, "streamlit run app.py -- --devices 4")
SCHEMAS = {
    "explorer": scenarios.schema(N),
    "collectives": collectivechoices.schema(N),
    "training": trainingmodel.schema(N),
    "cluster": clustersettings.schema(),
    "timing": sweepsetup.schema(N),
    "live": scenarios.schema(N),
    "types": typesettings.schema(N),
}


@pytest.mark.parametrize("k", range(len(toursteps.STEPS)), ids=[s.title for s in toursteps.STEPS])
def test_every_step_gives_blocks_and_links_that_pages_accept(k):
    blocks = toursteps.STEPS[k].demo(CTX)
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
        "folded_code",
        "html",
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


def _real_error(n: int) -> str:
    """The real call's exception for n + 1 rows on n devices, as a traceback's last line."""
    import jax
    import numpy as np

    from pmapviz.core.running import jaxsays

    try:
        jax.pmap(lambda v: v * 2, devices=devicefacts.local_devices_for_work()[:n])(
            np.zeros((n + 1, 3), np.float32)
        )
    except Exception as err:  # noqa: BLE001 -- what JAX says is what the step must show
        return jaxsays.said(err).text
    raise AssertionError("the real call ran")


@pytest.mark.parametrize("n", [1, 3, N])
def test_step_4_shows_the_planner_message_and_fix_then_jaxs_own_error_folded(n):
    """pmapviz's explanation and its fix first; then, folded, the exception the real call
    raises on these devices, verbatim (read from a lowering of the call)."""
    ctx = Context(n, CTX.labels[:n], FACTS, CTX.restart_command)
    blocks = toursteps.step_too_many(ctx)
    kinds = [b.kind for b in blocks]
    assert kinds.index("lesson") < kinds.index("folded_code")
    fix = next(k for k, b in enumerate(blocks) if str(b.body).startswith("**Fix:**"))
    assert kinds.index("lesson") < fix < kinds.index("folded_code")
    (folded,) = [b for b in blocks if b.kind == "folded_code"]
    words, code = folded.body
    real = _real_error(n)
    name = real.partition(": ")[0].rpartition(".")[2]  # IndivisibleError, ValueError
    assert code == real and folded.extra == f"What JAX itself says: {name}"
    assert f"on {n} device(s)" in words and not any(b.kind == "code" for b in blocks)
    err = next(b for b in blocks if b.kind == "lesson")
    there = "there is 1 device" if n == 1 else f"there are {n} devices"
    assert f"has {n + 1} elements but {there}" in err.body


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16])
def test_step_4_says_the_problem_first_and_how_many_devices_its_fix_leaves_idle(n):
    """Presenting, the problem comes before the fix's picture (the first 1280x720 screen was
    the fix); a fix that leaves devices idle says how many and how to use them all, in this
    server's own numbers."""
    from pmapviz.core.expressions import functions
    from pmapviz.core.planning import planning

    p = planning.plan(functions.get("double"), [(n + 1, 3)], n_devices=n)
    blocks = toursteps._fixed_cards(p, n)
    cards = [b for b in blocks if b.kind == "cards"]
    if not cards:
        return  # no reshape is offered here: nothing to leave idle
    used = int(cards[0].body["s0"].split(",")[0])
    idle = [b.body for b in blocks if b.kind == "info"]
    if used == n:
        assert not idle
    else:
        (words,) = idle
        assert f"runs on {used} of the {n} devices: {n - used} stay idle" in words
        padded = int(words.split("pad x to ")[1].split(" rows")[0].replace(",", ""))
        assert padded % n == 0 and padded >= n + 1
        fixed = scenarios.Scenario.defaults("double", n).with_changes(
            {"s0": f"{n}, {padded // n}, 3"}, n
        )
        assert fixed.plan(n)[1].ok and fixed.plan(n)[1].devices_used == n  # the advice works


def test_step_4_marks_its_problem_to_come_first():
    """Presenting, the question, the problem drawn and pmapviz's answer come first, then the
    fix's picture; JAX's own error (folded) is no part of the problem, so it never pushes a
    picture down."""
    blocks = toursteps.step_too_many(CTX)
    problem = [b.kind for b in blocks if b.problem]
    assert problem == ["markdown", "grid", "lesson"] and all(b.problem for b in blocks[:3])
    assert blocks[1].picture  # the problem's own picture, second: inside the first screen
    assert any(b.picture and not b.problem for b in blocks)  # the fix, drawn
    assert not any(b.problem for b in blocks if b.kind == "folded_code")


@pytest.mark.parametrize("n", [1, 3, 8, 16, 64])
def test_step_4_draws_the_entries_that_do_not_fit(n):
    """Entry i goes to device i; entry n has no device. Long axes are drawn with a gap."""
    labels = tuple(f"dev:{i}" for i in range(n))
    ctx = replace(CTX, n=n, labels=labels)
    grid = next(b for b in toursteps.step_too_many(ctx) if b.kind == "grid")
    (_, entries), (_, devices) = grid.body
    assert entries[-1] == (f"x[{n}]", None, f"entry {n} of axis 0: no device left for it")
    assert devices[-1][:2] == ("none left", None)
    assert entries[0][:2] == ("x[0]", 0) and devices[0][:2] == ("dev:0", 0)
    assert len(entries) == min(n + 1, gridhtml.SHOWN)
    drawn = [e[1] for e in entries if e[1] is not None]
    assert drawn == sorted(drawn) and all(devices[k][1] == e[1] for k, e in enumerate(entries))
    there = "there is 1 device" if n == 1 else f"there are {n} devices"
    assert f"has {n + 1} entries and {there}" in grid.extra


def test_step_5_results_come_from_the_planner():
    table = next(b for b in toursteps.step_axes(CTX) if b.kind == "table").body
    assert [r["result"] for r in table] == [f"({N}, 4, 2)", f"({N}, 3)", f"(3, {N})"]


def test_step_9_draws_its_measurement_on_arrival_with_the_time_it_was_taken():
    """Issue 38: step 9's picture is there without a press: pmap on 1 and on n devices and
    jit(vmap), each run's median and its speed-up over pmap on one device."""
    blocks = toursteps.step_scaling(CTX)
    grid = next(b for b in blocks if b.kind == "grid")
    names = [row for row, _ in grid.body]
    assert names == ["pmap on 1 device(s)", f"pmap on {N} device(s)", "jit(vmap) on 1 device(s)"]
    assert grid.body[0][1][1][0] == "1.00x" and "measured at " in grid.extra
    for _, ((ms, _, _), (speedup, _, _)) in grid.body:
        assert float(ms.removesuffix(" ms")) >= 0 and speedup.endswith("x")


def test_step_9_on_one_device_measures_pmap_once():
    ctx = Context(1, ("cpu:0",), FACTS, "streamlit run app.py -- --devices 4")
    blocks = toursteps.step_scaling(ctx)
    grid = next(b for b in blocks if b.kind == "grid")
    assert [row for row, _ in grid.body] == ["pmap on 1 device(s)", "jit(vmap) on 1 device(s)"]
    assert "nothing to split" in blocks[0].body and "1 devices" not in blocks[0].body


@pytest.mark.parametrize("n", sorted({1, 3, N}))
def test_step_3_writes_the_seeds_numbers_and_its_runs_from_their_own_objects(n):
    """The seed's pairs on n devices (10,000,000, or the largest multiple of n, said), the
    cards' shapes and title from the same split, and the live run's size from its result."""
    ctx = Context(n, CTX.labels[:n], FACTS, CTX.restart_command)
    blocks = toursteps.step_dot(ctx)
    split = seedpairs.split(n)
    words, cards = blocks[0].body, next(b for b in blocks if b.kind == "cards")
    assert split.reshape_words() in words
    pairs = n * toursteps.DOT_PAIRS_PER_DEVICE
    assert f"Live, with {pairs:,} pairs ({toursteps.DOT_PAIRS_PER_DEVICE:,} a device)" in words
    assert f"**({n}, {toursteps.DOT_PAIRS_PER_DEVICE:_}) -> reshape -> ({pairs:_},)**" in words
    _, plan, _ = scenarios.Scenario.from_texts(cards.body, n).plan(n)
    assert plan.ok and plan.leaves[0].shape == split.blocked
    assert cards.extra.startswith(f"{math.prod(split.blocked[:2]):,} pairs")
    assert ("largest multiple" in cards.extra) == bool(split.left_over) == (10_000_000 % n > 0)


def test_step_11_runs_smap_beside_pmap_and_shows_types_as_jax_prints_them():
    """pmap's first docstring line is the installed JAX's; the pipeline and the blocks are
    pictures; the typed table's types are those of a plain Explicit-mode jaxpr."""
    from pmapviz.features.tour import tourafter
    from pmapviz.features.types import typedcatalog, typedprogram

    blocks = tourafter.step_after(CTX)
    said = blocks[0].body
    assert tourafter.pmap_said() in said and "help(jax.pmap)" in said
    html = [b.body for b in blocks if b.kind == "html"]
    assert len(html) == 2 and all("role='img'" in h for h in html)
    assert "shard_map" in html[0] and "squeeze" in html[0]  # pmap's pipeline, from its jaxpr
    assert any(b.kind == "markdown" and "**equal**" in b.body for b in blocks)
    table = next(b.body for b in blocks if b.kind == "table")
    view = typedprogram.typed(typedcatalog.named("meshes", N), "explicit")
    assert [r["type (as JAX prints it)"] for r in table] == [
        ", ".join(r.eqn.out_types) for r in view.rows
    ]
    assert any("@" in r["type (as JAX prints it)"] for r in table)  # the sharding in the type
