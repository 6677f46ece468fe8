"""Figures of arrays split over devices: one labelled block per device, ppermute arrows."""

import pytest

from pmapviz import charts, layout


@pytest.mark.parametrize(
    "shape, axis",
    [
        ((), None),
        ((6,), 0),
        ((8, 3), 0),
        ((3, 8), 1),
        ((5, 2), None),
        ((8, 1_250_000, 3), 0),
        ((2, 3, 4, 5), 2),
    ],
)
def test_array_figure_draws_one_block_per_device_and_labels_them(shape, axis):
    n = 1 if axis is None else shape[axis]
    lay = layout.array_layout("x", shape, "float32", axis, n)
    fig = charts.array_figure(lay)
    hover = " ".join(fig.data[-1].hovertext)
    if axis is None:
        assert "every" in hover
    else:
        for piece in lay.pieces:
            assert f"{piece.device} holds x{piece.index_text}" in hover
        fills = {sh.fillcolor for sh in fig.layout.shapes}
        assert len(fills - {charts.NEUTRAL}) == n  # one colour per device


def test_permutation_figure_labels_devices_with_the_names_it_is_given():
    labels = ["TPU_0", "TPU_1", "TPU_2", "TPU_3"]  # any platform: names come from JAX
    fig = charts.permutation_figure(labels, [(0, 1), (1, 2)])
    texts = [a.text for a in fig.layout.annotations if not a.showarrow]
    assert all(t in texts for t in ("0", "1", "2", "3"))  # the number where the name won't fit
    hover = " ".join(fig.data[-1].hovertext)
    assert "TPU_3 receives nothing: zeros" in hover and "TPU_1 receives TPU_0's block" in hover
    assert "cpu:" not in hover
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert [(round(a.ax - 0.5), round(a.x - 0.5)) for a in arrows] == [(0, 1), (1, 2)]


@pytest.mark.parametrize("shape, axis", [((4096, 4), 0), ((3, 64), 1), ((256, 2, 3), 0)])
def test_many_devices_are_drawn_as_labelled_groups_with_counts(shape, axis):
    n = shape[axis]
    lay = layout.array_layout("x", shape, "float32", axis, n)
    fig = charts.array_figure(lay)
    blocks = [sh for sh in fig.layout.shapes if sh.fillcolor != charts.NEUTRAL]
    assert len(blocks) == charts.GROUPS  # not one per device
    per = n // charts.GROUPS
    hover = " ".join(fig.data[-1].hovertext)
    assert f"{per:,} devices, {lay.pieces[0].device} to {lay.pieces[per - 1].device}" in hover
    texts = " ".join(a.text for a in fig.layout.annotations)
    assert f"{n:,} devices, drawn as {charts.GROUPS} groups of up to {per:,}" in texts
    assert f"0-{per - 1}" in texts or f"{per}+" in texts  # the groups are labelled
