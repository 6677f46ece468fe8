"""Run f both ways: the two codes side by side, and both views checked against one device."""

import pytest

from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _run(n):
    from pmapviz.features.meshes.ui import mesh_run

    mesh_run.show(n)


def test_both_views_run_and_agree_with_one_device():
    at = render(_run, TEST_DEVICES)
    assert [c.value for c in at.code][:2] == [
        "x @ w",
        "jax.lax.all_gather(x @ w, 'model', axis=1, tiled=True, to='invarying')",
    ]
    at.selectbox(key="me_ex").set_value("matmul_psum").run()
    at.button(key="me_run").click().run()
    assert not at.exception and not at.error
    glob, local = (s.value for s in at.success)
    assert glob.startswith("Agrees with one device. global: output float32[16, 16]")
    assert local.startswith("Agrees with one device. per-device:") and "[8, 16]" in local
    emitted = [m.value for m in at.markdown if m.value.startswith("**XLA emitted**")]
    assert len(emitted) == 2 and all("all-reduce over model: 2 groups of 4" in e for e in emitted)


@pytest.mark.parametrize("n", [1, 3, 4])
def test_every_device_count_gets_ready_examples_that_run(n):
    """No count is told to restart: the examples take the count's own mesh (1x1, 1x3, 2x2)."""
    at = render(_run, n)
    assert not at.info or "--devices" not in at.info[0].value
    at.button(key="me_run").click().run()
    assert not at.exception and not at.error
    glob, local = (s.value for s in at.success)
    assert glob.startswith("Agrees with one device.") and local.startswith("Agrees with one")


def _sweep(n):
    from pmapviz.features.meshes.ui import mesh_run

    mesh_run.sweep(n)


def test_the_sweep_button_times_every_mesh_shape():
    at = render(_sweep, TEST_DEVICES)
    assert at.button[0].label == "Time it over mesh shapes (1x8, 2x4, 4x2, 8x1)"
    at.button(key="me_sweep").click().run()
    assert not at.exception
    rows = at.dataframe[0].value
    assert list(rows["mesh"]) == [m for m in ("1 x 8", "2 x 4", "4 x 2", "8 x 1") for _ in (0, 1)]
    assert rows["agrees"].all()


def test_a_run_of_an_example_is_shared_with_the_next_session_without_its_button(monkeypatch):
    """Issue 65: one run of an example for the room; another session on the same example
    sees it at once, said to be another session's run, and another example runs its own."""
    from pmapviz.features.meshes import meshexamples

    calls, real = [], meshexamples.run_example
    monkeypatch.setattr(
        meshexamples, "run_example", lambda ex, *a, **k: calls.append(ex.key) or real(ex, *a, **k)
    )
    first = render(_run, TEST_DEVICES)
    first.button(key="me_run").click().run()
    assert len(calls) == 1 and any("Your run" in c.value for c in first.caption)
    second = render(_run, TEST_DEVICES)
    assert len(calls) == 1 and len(second.success) == 2  # shown without pressing Run both
    assert any("Another session's run of these settings, shared" in c.value for c in second.caption)
    second.button(key="me_run").click().run()
    assert len(calls) == 1
    second.selectbox(key="me_ex").set_value("matmul_psum").run()
    assert not second.success  # another example: nothing shown until its own run
    second.button(key="me_run").click().run()
    assert calls == [calls[0], "matmul_psum"] and len(second.success) == 2
