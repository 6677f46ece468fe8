"""pmapviz.features.collectives.showcollective.collective: the Collectives playground as a notebook
view; every
device's values are the real run's, checked here against numpy from the view's own data."""

import re

import numpy as np
import pytest

from pmapviz.core.drawing import gridhtml, notebookviews
from pmapviz.core.expressions import collectivedefs
from pmapviz.features.collectives import (
    collectivechoices,
    collectivegrids,
    collectiveruns,
    showcollective,
)


def test_psum_gives_every_device_the_sum_of_every_block():
    v = showcollective.collective("psum", devices=4)
    assert isinstance(v, notebookviews.View) and v.data["devices"] == 4
    before = np.array(v.data["before"])
    assert before.shape == (4, v.data["elements"])
    for after in v.data["after"]:
        np.testing.assert_allclose(after, before.sum(axis=0))
    assert v.data["matches_numpy"] and v.data["compiled_ops"] == ["all-reduce"]
    assert [r["combines"] for r in v.data["rows"]] == [[0, 1, 2, 3]] * 4


def test_psum_over_groups_sums_within_each_group():
    v = showcollective.collective("psum", devices=4, groups="0 1 | 2 3")
    before = np.array(v.data["before"])
    for group in ([0, 1], [2, 3]):
        for d in group:
            np.testing.assert_allclose(v.data["after"][d], before[group].sum(axis=0))
    assert v.data["groups"] == [[0, 1], [2, 3]]
    assert "axis_index_groups=[[0, 1], [2, 3]]" in v.data["code"]
    same = showcollective.collective("psum", devices=4, groups=[[0, 1], [2, 3]])
    assert same.data["after"] == v.data["after"]


def test_all_gather_gives_every_device_every_block_and_says_where_each_came_from():
    v = showcollective.collective("all_gather", devices=4)
    before = np.array(v.data["before"])
    for after in v.data["after"]:
        np.testing.assert_array_equal(after, before)
    assert [r["came from"] for r in v.data["rows"]] == [[0, 1, 2, 3]] * 4
    assert v.data["compiled_ops"] == [collectivedefs.BY_KEY["all_gather"].hlo]


def test_ppermute_moves_blocks_along_the_pairs_and_says_so_in_words():
    v = showcollective.collective("ppermute", devices=4, pairs="0->1, 1->0")
    before, after = np.array(v.data["before"]), np.array(v.data["after"])
    np.testing.assert_array_equal(after[1], before[0])
    np.testing.assert_array_equal(after[0], before[1])
    assert not after[2:].any()  # no pair sends to 2 or 3: zeros
    assert v.data["pairs"] == [[0, 1], [1, 0]] and v.data["matches_numpy"]
    assert "device 0 sends its block to device 1" in v.text
    zeros = "[2, 3] are no pair's destination, so they receive zeros"
    assert zeros in v.text and notebookviews.escape(zeros) in v.html()


def test_unequal_groups_of_pmean_differ_from_numpy_and_show_its_answer():
    v = showcollective.collective("pmean", devices=4, groups="0 1 2 | 3")
    before = np.array(v.data["before"])
    assert not v.data["matches_numpy"] and v.data["differs"] == [3]
    np.testing.assert_allclose(v.data["expected"][3], before[3])  # a group of one: itself
    assert "numpy expects" in v.to_frame().columns and "pmean is wrong here" in v.text


def test_the_picture_is_the_pages_grid():
    v = showcollective.collective("all_gather", devices=2)
    grid = gridhtml.block_grid(
        collectivegrids.rows(v.source, v.data["labels"]), collectiveruns.picture_label(v.source)
    )
    assert grid in v._repr_html_()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(name="psumm"), "Unknown collective 'psumm': choose one of psum, pmean"),
        (dict(name="psum", devices=99), "choose 1 to 8 devices"),
        (dict(name="psum", groups="0 1 | 2"), "Groups must split the devices 0 to 7"),
        (dict(name="ppermute", pairs="0->1, 0->2"), "Device 0 is the source of two pairs"),
        (dict(name="ppermute", pairs="zero to one"), "is not a pair"),
        (dict(name="all_gather", groups="0 1 2 3 | 4 5 6 7"), "applies to the reductions"),
        (dict(name="psum", pairs="0->1"), "pairs apply to ppermute"),
        (dict(name="all_to_all", elements=3), "must be a multiple of 8"),
        (dict(name="psum", values="ones"), "choose one of 'arange' (1, 2, 3, ...) or 'random'."),
    ],
)
def test_bad_input_raises_the_playgrounds_message(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        showcollective.collective(**kwargs)


def test_an_unknown_name_lists_every_collective():
    with pytest.raises(collectivechoices.CollectiveError) as err:
        showcollective.collective("reduce")
    assert all(key in str(err.value) for key in collectivedefs.BY_KEY)


def test_the_html_is_self_contained_with_a_labelled_picture():
    html = showcollective.collective("psum", devices=4).html()
    assert re.search(r"role=[\"']img[\"'] aria-label=[\"']psum", html)
    assert "<script" not in html.lower() and "https://" not in html


def test_the_text_has_one_line_per_device():
    v = showcollective.collective("all_to_all", devices=4)
    lines = [line for line in v.text.splitlines() if line.startswith("device ")]
    assert len(lines) == 4 == len(v.to_frame())
    for d, line in enumerate(lines):
        assert line.startswith(f"device {d} ({v.data['labels'][d]}): before [")
