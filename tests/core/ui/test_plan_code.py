"""The code section: nothing drawn while it is closed; the open tab only."""

from pmapviz.scenario import Scenario
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _code(program, plan):
    from pmapviz.ui import plan_code
    from pmapviz.ui.shell import device_report

    plan_code.show(program, plan, device_report())


def test_closed_the_section_draws_no_code():
    texts = {"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"}
    program, plan, _ = Scenario.from_texts(texts, TEST_DEVICES).plan(TEST_DEVICES)
    at = render(_code, program, plan)
    assert not at.exception
    assert len(at.expander) == 1 and not at.code


def _shard_map(program, plan):
    from pmapviz.ui import plan_code

    plan_code._shard_map_code(program, plan)


def test_the_shard_map_tab_says_it_keeps_the_mapped_axis():
    texts = {"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"}
    program, plan, _ = Scenario.from_texts(texts, TEST_DEVICES).plan(TEST_DEVICES)
    at = render(_shard_map, program, plan)
    assert "rank-preserving" in at.markdown[0].value and "shard_map" in at.code[0].value
