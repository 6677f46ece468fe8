"""The typed program on a page: the grid first (in the presenter's slot), the refusals in
JAX's words, the legend, and each mode's code."""

from tests.core.ui.conftest import render, texts


def _view(name, modes, present=False):
    import streamlit as st

    from pmapviz.core.devices import devicefacts
    from pmapviz.core.ui import presenter
    from pmapviz.features.types import typedcatalog
    from pmapviz.features.types.ui import types_view

    st.session_state["present"] = present
    slot = presenter.picture_slot()
    st.markdown("the words under the title")
    n = devicefacts.facts().local_count
    types_view.show(typedcatalog.named(name, n), modes, slot)


def _grids(at):
    return [h.proto.body for h in at.get("html") if "role='img'" in h.proto.body]


def test_the_grid_then_refusals_in_jax_s_words_and_the_code():
    at = render(_view, "normalise", ["auto", "explicit"])
    assert not at.exception
    (grid,) = _grids(at)
    assert "aria-label='The typed program of Normalise" in grid
    said = texts(at)
    assert "**Explicit**: JAX refused this mode while it compiled it" in said
    assert at.code[0].value.startswith("AssertionError")
    assert "Auto's types carry no sharding" in said
    assert any("jax.vmap(f" in c.value for c in at.code)


def test_in_presenter_mode_the_grid_comes_first():
    at = render(_view, "meshes", ["explicit"], True)
    assert not at.exception
    first = next(e for e in at.main if e.type in ("html", "markdown"))
    assert first.type == "html" and "role='img'" in first.proto.body
