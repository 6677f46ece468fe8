"""A collective's picture rows: before and after on every device, where each piece came from
or what each result combines; device names escaped."""

from pmapviz.features.collectives import collectivechoices, collectivegrids, collectiveruns

LABELS = [f"cpu:{d}" for d in range(8)]


def outcome(key, n=4, m=2, groups=None, perm=None):
    choice = collectivechoices.playground_choice(key, n, groups or "", perm or "")
    out = collectiveruns.run(
        key,
        n,
        m,
        groups=[list(g) for g in choice.groups or ()] or None,
        perm=[tuple(p) for p in choice.perm or ()] or None,
    )
    return out, choice


def test_a_gather_says_where_each_piece_came_from():
    out, choice = outcome("all_gather")
    labels = [label for label, _ in collectivegrids.rows(out, LABELS)]
    assert labels == ["device", "x before", "y after", "came from"]


def test_a_reduction_over_groups_says_which_devices_each_result_combines():
    out, choice = outcome("psum", groups="0 1 | 2 3")
    rows = dict(collectivegrids.rows(out, LABELS))
    assert [tip for _, _, tip in rows["combines"]][2] == "device 2's result combines devices [2, 3]"


def test_device_names_are_escaped_and_values_match_the_run():
    out, _ = outcome("psum")
    rows = dict(collectivegrids.rows(out, ["<b>d0</b>", "d1", "d2", "d3"]))
    assert rows["device"][0][0] == "&lt;b&gt;d0&lt;/b&gt;"
    after = [text for text, _, _ in rows["y after"]]
    assert after == [collectiveruns.show_values(out.after[d]) for d in range(4)]
