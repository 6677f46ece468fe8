"""A collective's choices parsed and checked: groups and pairs in several spellings, bad ones
explained, and the playground's choice from what the user typed."""

import re

import pytest

from pmapviz.features.collectives import collectivechoices as choices


@pytest.mark.parametrize(
    "text, n, words",
    [
        ("0->1, 0->2", 4, "source of two pairs"),
        ("0->1, 2->1", 4, "destination of two pairs"),
        ("0->9", 4, "outside 0 to 3 (there are 4 devices)"),
        ("0->1", 1, "outside 0 to 0 (there is 1 device)"),
        ("zero to one", 4, "not a pair"),
        ("", 4, "empty"),
    ],
)
def test_bad_permutations_are_explained(text, n, words):
    with pytest.raises(choices.CollectiveError, match=re.escape(words)):
        choices.parse_pairs(text, n)


def test_pairs_parse_in_several_spellings():
    assert choices.parse_pairs("0->1, 1->2", 4) == [(0, 1), (1, 2)]
    assert choices.parse_pairs("0 1; 1 2", 4) == [(0, 1), (1, 2)]
    assert choices.parse_pairs("3→0", 4) == [(3, 0)]
    assert choices.parse_pairs("(0, 1), (1, 0)", 4) == [(0, 1), (1, 0)]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16])
def test_the_pairs_the_pages_code_prints_read_back_as_typed(n):
    """Issue 53: the code shows perm=[(0, 4), (4, 0), ...]; typed back it was refused."""
    from pmapviz.core.expressions.collectivedefs import BY_KEY, code_for, ring

    pairs = ring(n, "right")
    code = code_for(BY_KEY["ppermute"], None, pairs)
    printed = code[code.index("perm=") : code.rindex(")")]
    assert choices.parse_pairs(printed, n) == pairs
    assert choices.parse_pairs(str(pairs).strip("[]"), n) == pairs


@pytest.mark.parametrize("text", ["(0, 1), x", "(0, 1)) (", "(0, 1, 2)", "perm=[(0, -1)]"])
def test_tuples_with_anything_else_between_them_are_refused_by_name(text):
    with pytest.raises(choices.CollectiveError, match="is not a pair"):
        choices.parse_pairs(text, 4)


@pytest.mark.parametrize(
    "text, words",
    [
        ("0 1 | 2", "missing"),
        ("0 1 | 1 2 3", "twice"),
        ("[[0,1],[2,9]]", "outside"),
        ("a b | c d", "not a list"),
    ],
)
def test_bad_groups_are_explained(text, words):
    with pytest.raises(choices.CollectiveError, match=words):
        choices.parse_groups(text, 4)


def test_groups_parse():
    assert choices.parse_groups("0 1 | 2 3", 4) == [[0, 1], [2, 3]]
    assert choices.parse_groups("[[0,2],[1,3]]", 4) == [[0, 2], [1, 3]]
    assert choices.parse_groups("", 4) is None


def test_playground_choice_reads_modes_pairs_and_groups():
    """What the Collectives page hands the runner, from the widgets' text: rings from numpy-free
    arithmetic here (device k sends to k+1 or k-1), typed pairs as typed, groups only for the
    collectives that take them."""
    from pmapviz.features.collectives.collectivechoices import playground_choice

    n = 4
    right = tuple((k, (k + 1) % n) for k in range(n))
    left = tuple((k, (k - 1) % n) for k in range(n))
    assert playground_choice("ppermute", n, mode="ring right").perm == right
    assert playground_choice("ppermute", n, mode="ring left").perm == left
    assert playground_choice("ppermute", n, pairs_text="0->3, 3->0").perm == ((0, 3), (3, 0))
    assert playground_choice("ppermute", n, pairs_text="  ").perm == right  # empty: a ring
    assert playground_choice("ppermute", n, mode="ring left", pairs_text="0->1").perm == left
    with pytest.raises(choices.CollectiveError):
        playground_choice("ppermute", n, pairs_text="0->4")  # beyond this n
    got = playground_choice("psum", n, groups_text="0 1 | 2 3")
    assert got.groups == ((0, 1), (2, 3)) and got.perm is None
    assert playground_choice("psum", n).groups is None
    assert playground_choice("ppermute", n, groups_text="0 1 | 2 3").groups is None


@pytest.mark.parametrize("n", [2, 4])
def test_groups_naming_device_n_or_leaving_one_out_are_refused_in_words(n):
    with pytest.raises(choices.CollectiveError) as err:
        choices.check_groups([list(range(n))[:-1] + [n]], n)  # device n does not exist
    assert str(err.value) == f"Groups name a device outside 0 to {n - 1}."
    with pytest.raises(choices.CollectiveError) as err:
        choices.check_groups([list(range(n - 1))], n)
    assert str(err.value) == (
        f"Groups must split the devices 0 to {n - 1} so that each is in "
        f"exactly one group (missing [{n - 1}])."
    )
    assert choices.check_groups([[d] for d in range(n)], n) == [[d] for d in range(n)]


def test_pairs_text_up_to_2000_characters_is_read():
    assert choices.parse_pairs("0->1, 1->0" + " " * 1990, 2) == [(0, 1), (1, 0)]  # strip first
    assert choices.parse_pairs("0->1," + " " * 1990 + "1->0", 2) == [(0, 1), (1, 0)]  # 1999
    assert choices.parse_pairs("0->1," + " " * 1991 + "1->0", 2) == [(0, 1), (1, 0)]  # 2000
    with pytest.raises(choices.CollectiveError, match="too long"):
        choices.parse_pairs("0->1," + " " * 1992 + "1->0", 2)  # 2001
