"""harness/sweeps.py: the parts of a sweep split its cases whole, the commit picks one, and
PMAPVIZ_SWEEP overrides it (every case, or a named part); a bad value is refused."""

import subprocess

import pytest

from harness import sweeps
from tests.conftest import ROOT
from tests.e2e.test_hostile_links_e2e import hostile_links
from tests.e2e.test_text_fields_e2e import page_views


@pytest.mark.parametrize("cases", [hostile_links(8), page_views()], ids=["links", "views"])
def test_the_parts_split_a_sweep_whole_and_evenly(cases):
    parts = [sweeps.part({sweeps.ENV: f"{k}/{sweeps.PARTS}"}) for k in range(sweeps.PARTS)]
    taken = [p.take(cases) for p in parts]
    assert sorted(map(repr, sum(taken, []))) == sorted(map(repr, cases))  # each case once
    assert max(map(len, taken)) - min(map(len, taken)) <= 1
    assert sweeps.part({sweeps.ENV: "all"}).take(cases) == cases


def test_the_commit_picks_the_part_and_the_environment_overrides_it():
    here = sweeps.part({})
    assert here.parts == sweeps.PARTS and 0 <= here.index < sweeps.PARTS
    assert here == sweeps.part({})  # the same commit, the same part
    assert "commit" in here.why or "no git" in here.why
    assert str(sweeps.part({sweeps.ENV: "2/5"})).startswith("part 2 of 5")
    assert sweeps.part({sweeps.ENV: "all"}).parts == 1


def test_a_shallow_clone_picks_its_part_by_the_commits_hash(tmp_path, monkeypatch):
    """CI may clone one commit deep, where every commit would count 1 and run the same part."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(clone)], check=True)
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.strip()
    monkeypatch.setattr(sweeps, "ROOT", clone)
    here = sweeps.part({})
    assert here.index == int(sha, 16) % sweeps.PARTS and sha[:10] in here.why
    monkeypatch.setattr(sweeps, "ROOT", tmp_path)  # no git history at all
    assert sweeps.part({}) == sweeps.Part(0, sweeps.PARTS, "no git history here")


@pytest.mark.parametrize("value", ["3/3", "x", "1/0", "-1/3", "all!", "1/3/3"])
def test_a_bad_value_is_refused_with_what_works(value):
    with pytest.raises(ValueError, match="use 'all' or K/N"):
        sweeps.part({sweeps.ENV: value})


def test_deal_puts_each_walk_in_one_part_of_about_equal_cost():
    costs = {"follow": 86, "markup": 32, "n3": 22, "wheel": 21, "v4": 19, "walk": 18, "n1": 17}
    piles = sweeps.deal(costs, 3)
    assert sorted(sum(piles, [])) == sorted(costs)  # each once
    totals = [sum(costs[n] for n in pile) for pile in piles]
    assert max(totals) - min(totals) <= max(costs.values())
    assert piles == sweeps.deal(dict(reversed(costs.items())), 3)  # whatever the order given
    assert sweeps.deal(costs, 1) == [sorted(costs, key=lambda n: (-costs[n], n))]
    assert [sweeps.part({sweeps.ENV: f"{k}/3"}).picks(costs) for k in range(3)] == piles


class _Item:
    def __init__(self, nodeid: str, cpu_s: float | None):
        self.nodeid, self.cpu_s = nodeid, cpu_s

    def get_closest_marker(self, name):
        return pytest.mark.rotates(cpu_s=self.cpu_s).mark if self.cpu_s is not None else None


class _Config:
    def __init__(self, whole: bool):
        self.args_source = (
            pytest.Config.ArgsSource.TESTPATHS if whole else pytest.Config.ArgsSource.ARGS
        )
        self.deselected: list = []
        self.hook = self

    def pytest_deselected(self, items):
        self.deselected += items


@pytest.mark.parametrize("sweep", ["", "all", "1/3"])
@pytest.mark.parametrize("whole", [True, False], ids=["whole-suite", "named-tests"])
def test_a_whole_run_takes_one_part_of_the_long_walks_and_named_tests_all_run(
    monkeypatch, whole, sweep
):
    """The plugin of tests/rotation.py: the whole suite runs its commit's part of the walks
    (PMAPVIZ_SWEEP: every walk, or a named part), deselecting the rest; tests named run."""
    from tests import rotation

    monkeypatch.setenv(sweeps.ENV, sweep) if sweep else monkeypatch.delenv(sweeps.ENV, False)
    items = [_Item("quick", None), *(_Item(f"walk{k}", 10 + k) for k in range(6))]
    config, kept = _Config(whole), list(items)
    rotation.pytest_collection_modifyitems(config, kept)
    walks = {i.nodeid: i.cpu_s for i in items[1:]}
    if sweep == "all" or (not whole and not sweep):
        assert kept == items and not config.deselected
        return
    part = sweeps.part()
    assert part.parts == (3 if sweep == "1/3" else sweeps.PARTS) and kept[0] is items[0]
    assert sorted(i.nodeid for i in kept[1:]) == sorted(part.picks(walks))  # in collected order
    assert sorted(i.nodeid for i in kept + config.deselected) == sorted(i.nodeid for i in items)
    assert 1 <= len(kept) - 1 <= 3
