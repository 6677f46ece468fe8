"""Mesh problems are said per argument, with their fixes."""

from tests.core.ui.conftest import render


def _problems():
    from pmapviz.features.meshes import meshspecs
    from pmapviz.features.meshes.ui import mesh_view

    mesh = meshspecs.Mesh((2, 4), ("data", "model"))
    mesh_view.problems(mesh, [("w", (6, 16), ("model", None)), ("x", (8,), ("data",))])


def test_problems_are_said_with_their_fix_per_argument():
    at = render(_problems)
    (err,) = at.error  # x is fine; w is not
    assert err.value.startswith("**w**: Dimension 0 of w (6, 16)")
    assert "**Fix:** Make dimension 0 a multiple of 4 (4 or 8)" in err.value
