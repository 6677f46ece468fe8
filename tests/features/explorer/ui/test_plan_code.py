"""The code section: nothing drawn while it is closed; the open tab only."""

from pmapviz.core.planning.scenarios import Scenario
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _code(program, plan):
    from pmapviz.core.ui.shell import device_report
    from pmapviz.features.explorer.ui import plan_code

    plan_code.show(program, plan, device_report())


def test_closed_the_section_draws_no_code():
    texts = {"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"}
    program, plan, _ = Scenario.from_texts(texts, TEST_DEVICES).plan(TEST_DEVICES)
    at = render(_code, program, plan)
    assert not at.exception
    assert len(at.expander) == 1 and not at.code


def test_open_the_pmap_script_is_drawn_and_shard_map_is_not_repeated_here():
    texts = {"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"}
    program, plan, _ = Scenario.from_texts(texts, TEST_DEVICES).plan(TEST_DEVICES)
    at = render(_code, program, plan, state={"ex_code_open": True})
    assert not at.exception and len(at.tabs) == 2
    assert any("jax.pmap(" in c.value for c in at.code)
    assert not any("jax.shard_map(" in c.value for c in at.code)  # Open as shard_map shows it
