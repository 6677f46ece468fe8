"""Open as shard_map: closed, nothing is drawn; open, the mesh, specs and both scripts side
by side, a run that shows they agree (or shard_map's refusal), and a way to the Meshes page."""

from pmapviz.core.planning.scenarios import Scenario
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render, texts


def _view(program, plan):
    from pmapviz.core.ui.shell import device_report
    from pmapviz.features.meshes.ui import migration_view

    migration_view.show(program, plan, device_report())


def _settings(**changes):
    given = {"fn": "matmul", "s0": f"{TEST_DEVICES}, 3, 5", "s1": "5, 2", "a1": "None", **changes}
    program, plan, errors = Scenario.from_texts(given, TEST_DEVICES).plan(TEST_DEVICES)
    assert not errors and plan.ok, (errors, plan.problems)
    return program, plan


def test_closed_it_draws_nothing():
    at = render(_view, *_settings())
    assert not at.exception and len(at.expander) == 2 and not at.code and not at.button
    assert [e.label for e in at.expander] == [
        "Open as shard_map: these settings in today's API",
        "The pmap migration's traps, run on these settings",
    ]


def test_open_it_shows_specs_both_scripts_and_both_agree_when_run():
    at = render(_view, *_settings(), state={"ex_sm_open": True})
    assert not at.exception
    rows = at.table[0].value
    assert list(rows["PartitionSpec"]) == ["P('i')", "P()", "P('i')"]
    assert list(rows["shard_map's block"])[0] == "(1, 3, 5)"
    codes = [c.value for c in at.code]
    assert any("jax.pmap(" in c for c in codes) and any("jax.shard_map(" in c for c in codes)
    n = TEST_DEVICES  # x (n, 3, 5) merged: shard_map needs no reshape
    assert (
        f"in_specs=P('i') on x as one ({3 * n}, 5) array gives each of {n} devices a (3, 5) "
        "block directly"
    ) in at.caption[0].value
    at.button(key="ex_sm_run").click().run()
    assert not at.exception
    assert at.success[0].value.startswith(f"They agree: the same output ({TEST_DEVICES}, 3, 2)")


def test_shard_maps_refusal_of_an_unproven_replication_is_shown_not_raised():
    program, plan = _settings(
        fn="expr",
        args="x",
        body="lax.all_gather(x, 'i')",
        s0=f"{TEST_DEVICES}, 4",
        s1="",
        a1="0",
        out="None",
        name="i",
    )
    at = render(_view, program, plan, state={"ex_sm_open": True})
    at.button(key="ex_sm_run").click().run()
    assert not at.exception and "to='invarying'" in at.warning[0].value
    assert "out_axes=None" in texts(at)


def test_the_meshes_button_carries_the_arrays_to_the_meshes_page():
    at = render(_view, *_settings(), state={"ex_sm_open": True})
    assert at.button(key="ex_sm_meshes").label == "Open these arrays on the Meshes page"


def test_the_caption_speaks_of_the_shapes_shown_and_only_when_it_is_true():
    """The issue's case, x (3, 4) on 3 devices: its own (12,) array, never the seed's
    (10_000_000, 3); x (n,) has no axis to merge with, so no such sentence."""
    program, plan = _settings(fn="double", s0="3, 4", s1="", a1="0")
    at = render(_view, program, plan, state={"ex_sm_open": True})
    caption = at.caption[0].value
    assert "on x as one (12,) array gives each of 3 devices a (4,) block directly" in caption
    assert "10_000_000" not in caption and "3_333_333" not in caption
    program, plan = _settings(fn="double", s0=f"{TEST_DEVICES}", s1="", a1="0")
    at = render(_view, program, plan, state={"ex_sm_open": True})
    assert not at.exception and "block directly" not in at.caption[0].value
