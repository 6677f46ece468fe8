"""Every collective run for real and checked against numpy; what it holds in memory, compiled
first."""

import numpy as np
import pytest

from pmapviz.core.expressions import collectivedefs as defs
from pmapviz.features.collectives import collectivechoices as choices
from pmapviz.features.collectives import collectiveruns as col
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


@pytest.mark.parametrize("key", [c.key for c in defs.COLLECTIVES])
@pytest.mark.parametrize("n, m", [(N, N), (4, 8), (2, 2)])
def test_collective_matches_numpy(key, n, m):
    perm = defs.ring(n, "right") if defs.BY_KEY[key].takes_pairs else None
    out = col.run(key, n, m, perm=perm)
    x = col.make_input(n, m)
    expected = defs.BY_KEY[key].reference(x, None, perm)
    assert len(out.after) == n
    for d in range(n):
        np.testing.assert_allclose(out.after[d], expected[d], rtol=1e-6)
        np.testing.assert_array_equal(out.before[d], x[d])


@pytest.mark.parametrize("key", ["psum", "pmean", "pmax", "pmin"])
def test_axis_index_groups(key):
    groups = choices.even_groups(N, 2)
    out = col.run(key, N, 3, kind="random", groups=groups)
    expected = defs.BY_KEY[key].reference(col.make_input(N, 3, "random"), groups, None)
    for d in range(N):
        np.testing.assert_allclose(out.after[d], expected[d], rtol=1e-6)
    assert "axis_index_groups=[[0, 1]" in out.code


def test_ppermute_non_receivers_get_zeros_and_sources_are_traced():
    perm = [(0, 1), (1, 2)]
    out = col.run("ppermute", N, 2, perm=perm)
    assert out.sources[1] == [0] and out.sources[2] == [1]
    np.testing.assert_array_equal(out.after[0], np.zeros(2))
    assert out.sources[0] == [None]  # device 0 received nothing


def test_a_device_receiving_zeros_is_not_said_to_come_from_device_0():
    # issue 16: with arange inputs device 0's block used to be [0.], so zeros "came from 0"
    out = col.run("ppermute", N, 1, perm=[(1, 5)])
    assert out.sources[5] == [1]
    assert all(out.sources[d] == [None] for d in range(N) if d != 5)
    assert not out.warnings


@pytest.mark.parametrize("kind", choices.VALUE_KINDS)
def test_inputs_are_non_zero_and_distinct(kind):
    x = col.make_input(N, 64, kind)
    assert (x != 0).all() and len(np.unique(x)) == x.size


def test_sources_are_checked_against_the_values():
    c = defs.BY_KEY["ppermute"]
    before = [np.array([1.0]), np.array([2.0])]
    sources, warnings = col.checked_sources(c, 2, 1, [(0, 1)], before, [np.zeros(1), [9.0]])
    assert sources == [[None], [None]] and "differ" in warnings[0]


def test_unequal_groups_run_and_pmean_is_shown_beside_the_correct_mean():
    groups = [[4, 6], [0, 1, 2, 3, 5, 7]]
    s = col.run("psum", N, 2, groups=groups)
    for d in range(N):
        np.testing.assert_allclose(s.after[d], s.expected[d], rtol=1e-6)  # psum is right
    assert "unequal sizes" in s.warnings[0] and "pmean is wrong" not in s.warnings[0]
    m = col.run("pmean", N, 2, groups=groups)
    assert "first group (2)" in m.warnings[0]
    x = col.make_input(N, 2)
    np.testing.assert_allclose(m.after[0], x[[0, 1, 2, 3, 5, 7]].sum(axis=0) / 2, rtol=1e-6)
    np.testing.assert_allclose(m.expected[0], x[[0, 1, 2, 3, 5, 7]].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(m.after[4], m.expected[4], rtol=1e-6)  # the first group is right


def test_equal_groups_give_no_warning():
    assert not col.run("pmean", N, 2, groups=choices.even_groups(N, 4)).warnings


def test_all_gather_and_all_to_all_sources_come_from_values():
    g = col.run("all_gather", 4, 2)
    assert all(src == [0, 1, 2, 3] for src in g.sources)
    a = col.run("all_to_all", 4, 4)
    assert a.sources[2] == [0, 1, 2, 3]  # piece j of device 2 came from device j


def test_scatter_needs_divisible_blocks():
    with pytest.raises(choices.CollectiveError, match="multiple of 4"):
        col.run("all_to_all", 4, 6)
    with pytest.raises(choices.CollectiveError, match="reductions"):
        col.run("all_gather", 4, 4, groups=[[0, 1], [2, 3]])


def test_run_reports_the_cost_of_what_it_ran():
    out = col.run("psum", 4, 8, groups=[[0, 1], [2, 3]])
    assert out.cost == {"sent": 32.0, "received": 32.0}  # 2 * 1/2 * 8 * 4 bytes
    assert "g=2" in out.model


def test_the_picture_label_says_before_and_after():
    out = col.run("psum", 4, 1)
    x = [float(np.asarray(b).reshape(-1)[0]) for b in out.before]  # from the input's shards
    total = f"{sum(x):.3g}"  # what psum must give every device
    assert col.picture_label(out) == (
        f"{out.collective.label} on 4 devices: before "
        f"{', '.join(f'{v:.3g}' for v in x)}; after "
        f"{', '.join([total] * 4)}"
    )


# ---------------------------------------------------------------- its memorymodel, compiled first
class _Reserved(Exception):
    """Raised by a spy reserve: the need is recorded and nothing runs."""


def _spy_reserve(monkeypatch, seen: list):
    from pmapviz.core.budgets import memorypool

    def spy(need, label, on_wait=None, *args, **kwargs):
        seen.append(need)
        raise _Reserved(label)

    monkeypatch.setattr(memorypool, "reserve", spy)


@pytest.mark.parametrize("n", [2, N])
def test_memory_analysis_of_a_pmapped_collective_is_per_device(n):
    """What XLA reports for a pmap executable on CPU: one device's block as its argument
    (not the whole (n, m) input), n blocks out of all_gather, one out of psum."""
    from pmapviz.core.budgets import compiledmemory

    m = 1000
    gather = col.compiled_for(col.compile_collective("all_gather", n, None, ()), n, m)
    psum = col.compiled_for(col.compile_collective("psum", n, None, ()), n, m)
    assert compiledmemory.footprint(gather) == compiledmemory.Footprint(4 * m, 4 * m * n, 0)
    assert compiledmemory.footprint(psum) == compiledmemory.Footprint(4 * m, 4 * m, 0)


@pytest.mark.parametrize(
    "key, n", [("all_gather", N), ("all_to_all", 4), ("ppermute", N), ("psum", N)]
)
def test_a_run_reserves_what_its_compiled_program_holds_before_any_input_exists(
    monkeypatch, key, n
):
    """all_gather n = 8, m = 1,000,000: the formula said 290 MB, while the program holds 288 MB
    on the devices and the run 544 MB more on the host (the input, every device's result read
    back and numpy's reference); all_to_all's scratch (n = 4: 7 MB a device) is in the
    analysis alone."""
    from pmapviz.core.budgets import compiledmemory, memoryestimates

    seen: list = []
    _spy_reserve(monkeypatch, seen)
    made = []
    monkeypatch.setattr(col, "make_input", lambda *a, **k: made.append(a))
    m = 1_000_000
    with pytest.raises(_Reserved):
        col.run(key, n, m)
    (need,) = seen
    assert not made  # reserved before any input exists
    fp = compiledmemory.footprint(
        col.compiled_for(
            col.compile_collective(
                key, n, None, (tuple(defs.ring(n, "right")) if defs.BY_KEY[key].takes_pairs else ())
            ),
            n,
            m,
        )
    )
    on_devices = n * (fp.arguments + fp.outputs + fp.temporaries)
    host = n * (fp.arguments + 2 * fp.outputs)
    assert need.device >= on_devices and need.total >= on_devices + host
    assert need.total >= memoryestimates.collective_bytes(n, m).total
    if key == "all_gather":
        assert need.total >= 832_000_000 > memoryestimates.collective_bytes(n, m).total
    if key == "all_to_all":
        assert fp.temporaries > 0 and need.total > memoryestimates.collective_bytes(n, m).total


def test_a_block_that_could_never_fit_is_refused_naming_the_largest_that_fits(monkeypatch):
    from pmapviz.core.budgets import memorymodel, memorypool

    budget = memorymodel.Budget(200 * 10**6)
    monkeypatch.setattr(memorypool, "budget", lambda name=None: budget)
    seen: list = []
    _spy_reserve(monkeypatch, seen)
    with pytest.raises(
        memorymodel.BudgetError, match=r"blocks of 1,000,000 elements needs about"
    ) as e:
        col.run("all_gather", N, 1_000_000)
    assert not seen  # refused before it queued
    fit = int(
        e.value.args[0].split("largest block that fits is ")[1].split(" ")[0].replace(",", "")
    )
    ex = col.compiled_for(col.compile_collective("all_gather", N, None, ()), N, fit)
    assert budget.fits(col.run_need(ex, N, fit))  # what it names fits, compiled at that size
    bigger = col.compiled_for(col.compile_collective("all_gather", N, None, ()), N, fit + 1000)
    assert not budget.fits(col.run_need(bigger, N, fit + 1000))
    step = defs.BY_KEY["all_to_all"]  # a block of a multiple of n: the fit is one too
    with pytest.raises(memorymodel.BudgetError) as e:
        col.refuse_unfit(step, N, 8 * 10**6, memorymodel.Need(10**9, 10**9, 10**9), budget)
    # 2 MiB fixed + (1 GB - 2 MiB) x size / 8,000,000 <= 200 MB, a multiple of 8
    assert "largest block that fits is 1,586,544 element(s) per device." in str(e.value)
