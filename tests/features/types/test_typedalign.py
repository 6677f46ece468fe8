"""The modes' equations lined up by what they are, every row of each mode once, in order."""

from pmapviz.features.types import typedalign


def test_the_same_equations_share_a_row_and_the_others_get_their_own():
    slots = typedalign.align(
        {
            "auto": ["dot", "tanh", "sum"],
            "explicit": ["dot", "tanh", "sum"],
            "manual": ["shard_map", "pvary", "dot", "tanh", "sum", "psum"],
        }
    )
    assert slots == [
        {"manual": 0},
        {"manual": 1},
        {"auto": 0, "explicit": 0, "manual": 2},
        {"auto": 1, "explicit": 1, "manual": 3},
        {"auto": 2, "explicit": 2, "manual": 4},
        {"manual": 5},
    ]


def test_every_row_once_in_order_whatever_the_lists():
    columns = {"a": list("xyzxq"), "b": list("qzzyx"), "c": []}
    slots = typedalign.align(columns)
    for mode, keys in columns.items():
        assert [s[mode] for s in slots if mode in s] == list(range(len(keys)))
    assert typedalign.align({}) == []
