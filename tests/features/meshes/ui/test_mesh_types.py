"""The Meshes page's axis types: the table is meshtypes' (read from JAX), the trap of the two
constructors is said with their own defaults, and refusals are JAX's words in code blocks."""

from tests.core.ui.conftest import render, texts

ARGS = [("x", (8, 16), ("data", None)), ("w", (16, 12), (None, "model"))]


def _section(types, args):
    from pmapviz.features.meshes import meshspecs
    from pmapviz.features.meshes.ui import mesh_types

    mesh_types.show(meshspecs.Mesh((2, 4), ("data", "model"), types), args)


def test_the_table_holds_the_types_jax_gives_under_each_set_of_axis_types():
    from pmapviz.features.meshes import meshspecs, meshtypes

    types = ("explicit", "auto")
    at = render(_section, types, ARGS)
    assert not at.exception and not at.error
    rows = at.table[0].value
    found = meshtypes.read(meshspecs.Mesh((2, 4), ("data", "model"), types), ARGS)
    assert list(rows["your axis types (Explicit, Auto)"]) == [r.yours for r in found.args]
    assert list(rows["jax.make_mesh's default"]) == ["float32[8@data,16]", "float32[16,12@model]"]
    assert list(rows["Mesh(...)'s default"]) == ["float32[8,16]", "float32[16,12]"]
    said = texts(at)
    assert "gives its axes the types **Explicit, Explicit**" in said
    assert "gives **Auto, Auto**" in said and "Your axis types: data=Explicit, model=Auto." in said
    codes = [c.value for c in at.code]
    refusal = next(r for r in found.unplaced if r.refused).refused
    assert refusal in codes  # JAX's words, verbatim, in a code block
    assert "**Fix:** `x = jax.reshard(x, P('data', None))` first." in said
    assert at.get("download_button")


def test_a_manual_axis_is_read_inside_shard_map_and_set_mesh_refusal_is_shown():
    at = render(_section, ("manual", "explicit"), ARGS)
    assert not at.exception
    rows = at.table[0].value
    assert list(rows["each device, inside shard_map over 'data'"]) == [
        "float32[4,16]{V:data}",
        "float32[16,12@model]",  # model stays Explicit outside the Manual axis
    ]
    assert any("contains manual axes which is not allowed" in c.value for c in at.code)
