"""Your own f on the Meshes page: checked before it runs (problems with fixes, or what JAX
traced), then both views run side by side with their collectives and each device's memory."""

from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render, texts


def _own(n, mesh_shape=(2, 4), args=None):
    from pmapviz.core.ui import url_state
    from pmapviz.features.meshes import meshsettings, meshspecs
    from pmapviz.features.meshes.ui import mesh_own

    url_state.load("me_", meshsettings.schema(n))
    mesh = meshspecs.Mesh(mesh_shape, ("data", "model")[: len(mesh_shape)])
    default = [("argument 1", (8, 16), ("data", None)), ("argument 2", (16, 16), (None, "model"))]
    mesh_own.show(mesh, args if args is not None else default, n)


def test_the_default_f_is_traced_then_runs_both_ways_with_memory_per_device():
    at = render(_own, TEST_DEVICES)
    assert not at.exception and not at.error
    traced = texts(at)
    assert "the global f returns float32(8, 16)" in traced and "(4, 16) block" in traced
    assert "varying over data" in traced
    at.button(key="me_own_run").click().run()
    assert not at.exception and not at.error
    glob, local = (s.value for s in at.success)
    assert glob.startswith("Agrees with one device. global:") and "[4, 16]" in glob
    assert local.startswith("Agrees with one device. per-device:")
    emitted = [m.value for m in at.markdown if m.value.startswith("**XLA emitted**")]
    assert all("all-gather over model: 2 groups of 4" in e for e in emitted)
    rows = at.table[0].value
    assert list(rows["view"]) == ["global", "per-device"]
    assert list(rows["arguments"]) == ["512 bytes"] * 2  # (4, 16) + (16, 4) float32 blocks


def test_an_out_spec_that_claims_replication_is_refused_with_its_fix():
    at = render(
        _own, TEST_DEVICES, query={"lf": "lax.all_gather(x @ w, 'model', axis=1, tiled=True)"}
    )
    assert not at.exception
    (err,) = at.error
    assert "same on every device along `model`" in err.value and "**Fix:**" in err.value
    assert not [b for b in at.button if b.key == "me_own_run"]  # nothing runs


def test_text_that_is_not_a_spec_or_an_expression_is_said_not_raised():
    at = render(_own, TEST_DEVICES, query={"out": "P('data'"})
    assert not at.exception  # a link's bad value falls back to the default, with a note
    at.text_input(key="me_out").set_value("P('data'").run()
    assert not at.exception and any("out_specs" in e.value for e in at.error)
    at.text_input(key="me_out").set_value("P('data', None)").run()
    at.text_input(key="me_lf").set_value("x @@ w").run()
    assert not at.exception
    assert any("per-device f: column" in e.value for e in at.error)


def test_a_mesh_bigger_than_the_server_is_not_traced():
    at = render(_own, TEST_DEVICES, (2, TEST_DEVICES), [("argument 1", (8, 16), ("data", None))])
    assert not at.exception and "traced and run on meshes this server has" in at.info[0].value
