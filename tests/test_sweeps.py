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
