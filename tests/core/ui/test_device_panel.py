"""The sidebar's device panel: every device labelled, the budgets, the restart command."""

from pmapviz.core.ui import device_panel
from pmapviz.core.ui.shell import device_report
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def test_one_labelled_chip_per_device():
    chips = device_panel.device_chips(device_report())
    assert chips.count("<span") == TEST_DEVICES and "cpu:0·p0" in chips


def _panel():
    from pmapviz.core.ui import device_panel
    from pmapviz.core.ui.shell import device_report

    device_panel.show(device_report())


def test_the_panel_says_the_devices_the_memory_and_how_to_restart():
    at = render(_panel)
    assert not at.exception
    side = "\n".join(m.value for m in at.sidebar.markdown)
    assert f"{TEST_DEVICES} devices" in side and "emulated" in side
    assert any("budget" in c.value.lower() for c in at.sidebar.caption)
    at.sidebar.number_input(key="restart_devices").set_value(4).run()
    assert "4" in at.sidebar.code[0].value
