"""AppTest for the Live outputs and Collectives pages, including the invalid choices."""

import pytest

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.expressions import collectivedefs
from tests.conftest import TEST_DEVICES
from tests.pages.conftest import all_text

N = TEST_DEVICES


def live(run_app, **query):
    at = run_app(page=page_file("live"), query={k: str(v) for k, v in query.items()})
    assert not at.exception, [e.value for e in at.exception]
    return at


def live_run(run_app, **query):
    """The live run of these settings, whether it went at once or waited for its Run button:
    a 12.8 MB run is estimated at about 1 s against the 2 s under which a run goes at once
    (live_run.AUTO_RUN_S), from rates this process measured, and rates measured while the
    machine was busy put it past that."""
    at = live(run_app, **query)
    if run := [b for b in at.button if b.label.startswith("Run (")]:
        run[0].click().run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def test_live_runs_small_settings_at_once_and_passes(run_app):
    at = live(run_app, fn="batched_dot", s0=f"{N}, 50, 3", s1=f"{N}, 50, 3")
    assert "PASS" in at.success[0].value
    assert f"({N}, 50) -> ({N * 50},)" in all_text(at) and "the values match" in all_text(at)
    rows = at.dataframe[0].value
    assert list(rows["device"]) == [f"cpu:{k}" for k in range(N)]
    assert list(rows["x slice"]) == [f"[{k}:{k + 1}, :, :]" for k in range(N)]
    assert all(b.startswith("shape (50,)") for b in rows["out block (f returns)"])
    labels = [m.label for m in at.metric]
    for wanted in ("Compile (trace + XLA)", "Transfer to devices", "Compute (median)"):
        assert wanted in labels


@pytest.mark.parametrize("kind", ["arange", "random", "ones"])
def test_live_value_kinds_and_broadcast_argument(run_app, kind):
    at = live(run_app, fn="matmul", s0=f"{N}, 2, 3", s1="3, 2", a1="None")
    at.radio(key="live_kind").set_value(kind).run()
    assert not at.exception and "PASS" in at.success[0].value
    rows = at.dataframe[0].value
    assert set(rows["w slice"]) == {"[:, :]"}  # every device holds all of w


def test_live_small_values_are_shown_exactly(run_app):
    at = live(run_app, fn="double", s0=f"{N}, 2")
    rows = at.dataframe[0].value
    assert list(rows["x block (f sees)"])[1] == "[2., 3.]"  # arange: device 1 holds x[1] = [2, 3]
    assert list(rows["out block (f returns)"])[1] == "[4., 6.]"


def test_live_runs_your_own_f_checked_against_jit_vmap(run_app):
    at = live(
        run_app,
        fn="expr",
        args="x, w",
        body="jnp.tanh(x @ w) + lax.psum(x, 'i').sum()",
        s0=f"{N}, 2, 3",
        s1="3, 2",
        a0="0",
        a1="None",
        name="i",
        pn="4096",
    )
    assert "PASS" in at.success[0].value
    assert "no numpy version" in at.success[0].value
    assert "plans for 4,096 devices; live runs use this server's 8" in all_text(at)
    assert set(at.dataframe[0].value["w slice"]) == {"[:, :]"}
    at = live(run_app, fn="expr", args="x", body="(x, x * 2)", s0=f"{N}, 2")  # two outputs
    assert not at.dataframe and any("several arrays" in i.value for i in at.info)


def test_live_invalid_settings_do_not_run(run_app):
    at = live(run_app, fn="batched_dot", s0="10000000, 3", s1="10000000, 3")
    assert "10,000,000 elements" in at.error[0].value
    assert not at.dataframe and not at.metric
    (box,) = [e for e in at.expander if e.label.startswith("What JAX itself says")]
    assert box.label == "What JAX itself says: ValueError" and not box.proto.expanded
    assert f"got shape=({10_000_000 // N}, 3)" in box.code[0].value  # lowered, nothing made


def test_live_large_settings_wait_for_the_button(run_app):
    at = live(run_app, fn="batched_dot", s0=f"{N}, 1250000, 3", s1=f"{N}, 1250000, 3")
    assert any("press Run" in i.value for i in at.info)
    assert not at.dataframe


def test_live_over_the_budget_is_refused_before_allocating(run_app):
    at = live(run_app, fn="double", s0=f"{N}, 100000000000")
    assert any("at its peak; the memory budget is" in e.value for e in at.error)


def test_seed_example_runs_at_a_small_size(run_app):
    at = live(run_app, fn="double", s0=f"{N}, 2")
    at.number_input(key="dot_pairs").set_value(8192)
    at.button(key="dot_run").click().run()
    assert not at.exception
    text = all_text(at)
    assert f"({N}, {8192 // N:_}) -> reshape -> (8_192,)" in text
    assert "the values equal jit(vmap(dot))" in text
    assert "but gives shape" in text and "(checked: it equals the block sums)" in text
    lesson = next(w.value for w in at.warning if "8,192 elements" in w.value)
    assert "10,000,000" not in lesson
    (jax_words,) = [e for e in at.expander if e.label.startswith("What JAX itself says")]
    assert jax_words.label == "What JAX itself says: ValueError"  # JAX's own, after the lesson
    (said,) = jax_words.code
    assert said.value.startswith("ValueError: cannot select an axis to squeeze out")
    assert f"got shape=({8192 // N}, 3)" in said.value and "cryptic" not in text
    assert any("shares that memory instead of copying" in c.value for c in at.caption)
    rows = at.table[-1].value
    assert len(rows) == N and list(rows["block"]) == [f"{8192 // N:,} pairs"] * N
    at.number_input(key="dot_pairs").set_value(8000)  # blocks of 8000 / N pairs: copies
    at.button(key="dot_run").click().run()
    assert any("Transfer copied the inputs" in c.value for c in at.caption)
    assert not any("shares that memory" in c.value for c in at.caption)


def test_seed_example_refuses_uneven_pairs(run_app):
    at = live(run_app, fn="double", s0=f"{N}, 2")
    at.number_input(key="dot_pairs").set_value(1001)
    at.button(key="dot_run").click().run()
    assert not at.exception
    assert any("do not split evenly" in e.value for e in at.error)


# ---------------------------------------------------------------- collectives
def coll(run_app, **query):
    at = run_app(page=page_file("collectives"), query={k: str(v) for k, v in query.items()})
    assert not at.exception, [e.value for e in at.exception]
    return at


def grid(at) -> str:
    return next(m.value for m in at.markdown if "x before" in m.value)


@pytest.mark.parametrize("key", [c.key for c in collectivedefs.COLLECTIVES])
def test_every_collective_renders(run_app, key):
    at = coll(run_app, c=key, m=str(N))
    assert not at.error
    assert "y after" in grid(at)
    assert "Communication" in all_text(at)


def test_psum_values_in_the_grid(run_app):
    at = coll(run_app, c="psum", n="4", m="2")
    total = [sum(range(1, 9, 2)), sum(range(2, 9, 2))]  # 1..8 as (4, 2): columns summed
    assert f"{total[0]}, {total[1]}" in grid(at)


def test_unequal_groups_run(run_app):
    at = coll(run_app, c="psum", g="0 1 2 | 3 4 5 6 7")  # allowed since issue 16
    assert not at.error and "y after" in grid(at)
    assert "numpy expects" not in grid(at)  # psum over unequal groups is right on CPU


def test_pmean_over_unequal_groups_shows_the_wrong_mean_beside_numpy(run_app):
    """JAX 0.10 on CPU divides every group by the FIRST group's size: shown, not refused."""
    at = coll(run_app, c="pmean", g="0 1 | 2 3 4 5 6 7", n="8", m="1")
    assert not at.error
    g = grid(at)
    assert "numpy expects" in g
    # inputs are 1..8: the big group's right mean is 5.5; JAX divides its sum 33 by 2: 16.5
    assert ">16.5<" in g and ">5.5<" in g
    assert any("first group" in w.value for w in at.warning), [w.value for w in at.warning]


def test_ppermute_shows_zeros_for_devices_that_receive_nothing(run_app):
    at = coll(run_app, c="ppermute", p="custom", pairs="0->1", n="4", m="2")
    assert any("[0, 2, 3] are no pair's destination" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) == 1


@pytest.mark.parametrize(
    "query, words",
    [
        (dict(c="ppermute", p="custom", pairs="0->1, 0->2"), "source of two pairs"),
        (dict(c="ppermute", p="custom", pairs="0->1, 2->1"), "destination of two pairs"),
        (dict(c="ppermute", p="custom", pairs="0->99"), "outside"),
        (dict(c="psum", g="0 1 | 2"), "missing"),
        (dict(c="all_to_all", m="3"), f"multiple of {N}"),
        (dict(c="psum_scatter", m="5"), f"multiple of {N}"),
    ],
)
def test_invalid_choices_are_explained(run_app, query, words):
    at = coll(run_app, **query)
    assert any(words in e.value for e in at.error), [e.value for e in at.error]


@pytest.mark.parametrize(
    "query, words, default",
    [
        (dict(n="0"), "nearest valid: 1", str(N)),
        (dict(n="99"), f"nearest valid: {N}", str(N)),
        (dict(m="-1"), "from 1 to 64", "8"),
        (dict(m="1e9"), "digits 0-9 only", "8"),
        (dict(n="²"), "digits 0-9 only", str(N)),
        (dict(m="9" * 30), "far too large", "8"),
    ],
)
def test_a_bad_link_value_falls_back_to_the_default_with_a_note(run_app, query, words, default):
    at = coll(run_app, c="psum", **query)
    assert not at.exception
    notes = [w.value for w in at.warning]
    assert any(words in w and "Using the default" in w for w in notes), notes
    key = next(iter(query))
    assert at.text_input(key=f"co_{key}").value == default
    assert not at.error  # the page runs with the default


@pytest.mark.parametrize(
    "typed, words",
    [("²", "digits 0-9 only"), ("0", "nearest valid: 1"), ("999999", "nearest valid: 8")],
)
def test_typed_bad_counts_are_explained(run_app, typed, words):
    at = coll(run_app, c="psum")
    at.text_input(key="co_n").input(typed).run()
    assert not at.exception
    assert any(words in e.value for e in at.error), [e.value for e in at.error]


def test_groups_reduce_within_groups(run_app):
    at = coll(run_app, c="psum", g="0 1 | 2 3", n="4", m="1")
    assert "axis_index_groups=[[0, 1], [2, 3]]" in at.code[0].value
    assert ">3<" in grid(at) and ">7<" in grid(at)  # inputs 1..4: 1+2 and 3+4


def test_collectives_link_reproduces_the_view(run_app):
    at = coll(run_app, c="all_gather", n="4", m="2", v="random")
    assert at.selectbox(key="co_c").value == "all_gather"
    assert at.text_input(key="co_n").value == "4" and at.radio(key="co_v").value == "random"
    assert at.query_params["c"] == "all_gather"


def test_the_link_that_aborted_the_server_is_refused_from_the_shapes(run_app):
    """(8, 2**30, 1) @ (1, 2**30) gives a (8, 2**30, 2**30) output: 2**63 elements, which made
    XLA abort the whole process; np.prod wrapped it to a negative size, so it passed the budget."""
    query = dict(fn="matmul", s0="8,1073741824,1", s1="1,1073741824", a0="0", a1="None")
    at = run_app(page=page_file("live"), query=query)
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "9,223,372,036,854,775,808 elements" in errors and "2**40" in errors
    assert any("Nothing runs" in i.value for i in at.info)


def test_live_over_the_time_limit_is_refused_with_a_smaller_size(run_app):
    """12 calls of 1.1 TFLOP each: over a 10 s limit at any FLOP rate this CPU measures (86 to
    215 GFLOP/s seen; at 60 s the fastest measurements let it through)."""
    from pmapviz.core.devices import jaxstartup

    query = dict(fn="matmul", s0=f"{N}, 4096, 4096", s1="4096, 4096", a0="0", a1="None")
    original = jaxstartup.applied_settings()
    try:
        at = run_app(page=page_file("live"), argv=["--max-seconds", "10"], query=query)
    finally:
        jaxstartup.apply(original)  # the next test's limit is the default again
    assert not at.exception
    errors = [e.value for e in at.error]
    if any("the budget is" in e for e in errors):
        pytest.skip("this machine's memory budget refuses it first")
    assert any(
        "This live run would take about" in e
        and "the limit is" in e
        and "Make the inputs about" in e
        for e in errors
    ), all_text(at)
    assert not at.success  # nothing ran


def test_live_runs_a_dict_argument_leaf_by_leaf(run_app):
    """A parameter dict replicated with in_axes None, and one with a per-leaf prefix: the run
    passes the jit(vmap) check, and every leaf has its own slice column."""
    at = live(
        run_app,
        fn="expr",
        args="x, params",
        body="jnp.tanh(x @ params['w'] + params['b'])",
        s0=f"{N}, 4, 5",
        s1="{'w': (5, 2), 'b': (2,)}",
        a0="0",
        a1="None",
    )
    assert "PASS" in at.success[0].value, [e.value for e in at.error]
    rows = at.dataframe[0].value
    assert set(rows["params['w'] slice"]) == {"[:, :]"} and set(rows["params['b'] slice"]) == {
        "[:]"
    }
    assert list(rows["x slice"]) == [f"[{k}:{k + 1}, :, :]" for k in range(N)]
    assert "`params['w']` (5, 2) (in_axes None" in all_text(at)
    at = live(
        run_app,
        fn="expr",
        args="x, params",
        body="x * params['s'] + params['t']",
        s0=f"{N}, 3",
        s1=f"{{'s': (3,), 't': ({N}, 3)}}",
        a0="0",
        a1="{'s': None, 't': 0}",
    )
    assert "PASS" in at.success[0].value, [e.value for e in at.error]
    rows = at.dataframe[0].value
    assert list(rows["params['t'] slice"]) == [f"[{k}:{k + 1}, :]" for k in range(N)]


def test_a_finished_live_run_keeps_no_arrays_alive(run_app):
    """Issue 26: a server kept each session's last live run (its shards held the devices'
    buffers through the page's globals, which the session keeps for its fragments), so a room
    opening 30 links kept 30 runs: +1.9 GiB over a 512 MiB budget. After a run, and after a
    second, larger one, the arrays alive are what they were before it (within 1 MB)."""
    import gc

    import jax

    def alive() -> int:
        gc.collect()
        return sum(a.nbytes for a in jax.live_arrays())

    at = live(run_app, fn="double", s0=f"{N}, 1000")  # compiled, warm
    before = alive()
    for size in (200_000, 400_000):  # 6.4 and 12.8 MB in, as much out
        at = live_run(run_app, fn="double", s0=f"{N}, {size}")
        assert "PASS" in at.success[0].value
        assert alive() - before < 2**20, (size, alive() - before)


def test_what_f_makes_in_between_is_refused_before_anything_runs(run_app):
    """The outer-product link of issue 36: inputs of 48 KB per device, an outer product of
    576 MB per device inside f. The compiled program says so before any input exists, and
    the run is refused against the budget instead of taking the server past it."""
    body = "(jnp.einsum('a,b->ab', x, x) @ x).sum()"
    query = {"fn": "expr", "args": "x", "body": body, "s0": f"{N}, 12000", "a0": "0"}
    at = run_app(page=page_file("live"), argv=["--max-bytes", "1G"], query=query)
    assert not at.exception
    refusal = next(e.value for e in at.error if "what f makes in between" in e.value)
    assert "at its peak; the memory budget is" in refusal
    assert not at.success  # nothing ran


def test_own_f_runs_in_its_own_process_and_the_page_says_so(run_app):
    from pmapviz.core.running import sandbox

    at = live(run_app, fn="expr", args="x", body="jnp.tanh(x) * 2", s0=f"{N}, 6", a0="0")
    assert "PASS" in at.success[0].value
    assert "Your own f ran in a process of its own" in all_text(at)
    assert sandbox._WORKER.alive()
    at = live(run_app, fn="batched_dot", s0=f"{N}, 5, 3", s1=f"{N}, 5, 3")
    assert "PASS" in at.success[0].value and "process of its own" not in all_text(at)


def test_own_f_past_the_time_limit_is_stopped_and_the_page_says_so(run_app, monkeypatch):
    """An estimate that lets a slow f through (as a model hole would): the run goes to the
    sandbox's worker, which is ended at the limit; the page says so, and nothing is left
    running."""
    from pmapviz.core.budgets import timebudget
    from pmapviz.core.devices import jaxstartup
    from pmapviz.core.running import sandbox

    monkeypatch.setattr(timebudget, "check_live", lambda *a, **k: 0.1)
    monkeypatch.setattr(jaxstartup, "time_limit", lambda: 1)
    monkeypatch.setattr(sandbox, "GRACE_S", 0.5)
    sandbox._WORKER.stop()
    try:
        at = live(
            run_app,
            fn="expr",
            args="x",
            body="jnp.sort(jnp.einsum('a,b,c->abc', x, x, x)).sum()",
            s0=f"{N}, 200",
            a0="0",
            out="0",
        )
        assert "press Run" in all_text(at)  # its memory: no run starts from the link
        next(b for b in at.button if b.label.startswith("Run (")).click().run()
        errors = " ".join(e.value for e in at.error)
        assert "ran past the 1 s limit" in errors and "nothing of it is left running" in errors
        assert not at.success and not at.exception
        assert not sandbox._WORKER.alive()
    finally:
        sandbox._WORKER.stop()
