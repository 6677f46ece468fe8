"""ppermute as a Plotly figure: each device named as JAX names it, an arrow per pair."""

from pmapviz.core.drawing import permutationfigure


def test_permutation_figure_labels_devices_with_the_names_it_is_given():
    labels = ["TPU_0", "TPU_1", "TPU_2", "TPU_3"]  # any platform: names come from JAX
    fig = permutationfigure.permutation_figure(labels, [(0, 1), (1, 2)])
    texts = [a.text for a in fig.layout.annotations if not a.showarrow]
    assert all(t in texts for t in ("0", "1", "2", "3"))  # the number where the name won't fit
    hover = " ".join(fig.data[-1].hovertext)
    assert "TPU_3 receives nothing: zeros" in hover and "TPU_1 receives TPU_0's block" in hover
    assert "cpu:" not in hover
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert [(round(a.ax - 0.5), round(a.x - 0.5)) for a in arrows] == [(0, 1), (1, 2)]
