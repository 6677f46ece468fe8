"""A live run's result: the verdict against jit(vmap(f)), the timings, each device's blocks."""

from pmapviz.core.planning.scenarios import Scenario
from pmapviz.core.running import pmapcompile, pmaprun
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _result(res, plan, program):
    from pmapviz.core.ui.shell import device_report
    from pmapviz.features.live.ui import live_result

    live_result.show(res, plan, program, device_report())


def test_a_passing_run_says_pass_with_its_checks_and_one_row_per_device():
    texts = {"fn": "add", "s0": f"{TEST_DEVICES}, 4", "s1": f"{TEST_DEVICES}, 4"}
    program, plan, _ = Scenario.from_texts(texts, TEST_DEVICES).plan(TEST_DEVICES)
    res = pmaprun.run_plan(program, plan, pmapcompile.compile_plan(program, plan))
    at = render(_result, res, plan, program)
    assert not at.exception
    assert at.metric[0].value == "PASS" and "**PASS**" in at.success[0].value
    assert "max |pmap - numpy|" in at.success[0].value
    assert len(at.dataframe[0].value) == TEST_DEVICES
