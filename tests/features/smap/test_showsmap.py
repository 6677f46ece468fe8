"""``pmapviz.smap`` in a notebook: the view draws both pipelines and the run, prints as text,
gives its data; a refusal is drawn with JAX's words and the fix; bad settings are one clear
ValueError."""

from __future__ import annotations

import pytest

import pmapviz
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_a_catalog_example_draws_both_pipelines_and_the_run():
    view = pmapviz.smap("normalise", [(N, 4)])
    assert view.title == "pmap and jax.smap of normalise: smap runs and agrees"
    body = view._repr_html_()
    assert "pmap, as JAX 0.10 runs it" in body and "&middot; smap" in body
    assert "smap equals pmap element by element" in body
    data = view.to_dict()
    assert data["ok"] and data["run"]["mesh_devices"] == N
    assert "smap equals jit(vmap)" in str(view)
    assert view.ok and view.run.block == 1  # the comparison reads on through the view


def test_your_own_function_and_a_refusal_with_jaxs_words():
    view = pmapviz.smap(lambda x: x * 2, [(N, 3)], set_mesh=False)
    assert view.title.endswith("smap refuses") and view.to_dict()["refusal"]["code"] == "no_mesh"
    assert "What JAX itself says:" in view.html() and "mesh context" in view.html()


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"mode": "Manual"}, "is not one of: Explicit, Auto"),
        ({"mesh_devices": 0}, "Mesh devices"),
        ({"shapes": [(N, 3)], "in_axes": 7}, "smap cannot be called with these settings"),
    ],
)
def test_bad_settings_are_one_clear_value_error(kwargs, words):
    with pytest.raises(ValueError, match=words.split(":")[0]):
        pmapviz.smap("double", **kwargs)
