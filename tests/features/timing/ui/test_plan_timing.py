"""Timing the explorer's settings: what would be timed, or why it cannot be."""

from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _timing(n):
    from pmapviz.core.budgets import memorypool
    from pmapviz.features.timing.ui import plan_timing

    plan_timing.show(n, 3, memorypool.budget())


def test_valid_settings_say_what_is_timed_and_the_button_times_them():
    query = {"fn": "add", "s0": f"{TEST_DEVICES}, 64", "s1": f"{TEST_DEVICES}, 64"}
    at = render(_timing, TEST_DEVICES, query=query)
    assert not at.exception
    assert (
        f"pmap on {TEST_DEVICES} device(s) vs jit(vmap(f)) on one vs numpy" in at.markdown[0].value
    )
    at.button(key="tl_explorer").click().run(timeout=300)
    assert [m.impl for m in at.session_state["tl_report"].results] == ["pmap", "vmap", "numpy"]


def test_invalid_settings_send_you_to_the_explorer():
    many = f"{2 * TEST_DEVICES}, 4"  # more than the devices along the mapped axis
    at = render(_timing, TEST_DEVICES, query={"fn": "add", "s0": many, "s1": many})
    assert "not valid yet" in at.warning[-1].value and not at.button
