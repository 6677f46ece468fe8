"""The seed's example at full size, in a fragment: choose the pairs, run, see the result."""

from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _example(n):
    from pmapviz.features.live.ui import dot_example

    dot_example.show(n)


def test_running_the_example_at_the_smallest_size_shows_its_result():
    at = render(_example, TEST_DEVICES)
    assert not at.exception and "full size" in at.header[0].value
    at.number_input(key="dot_pairs").set_value(8_000)
    at.button(key="dot_run").click().run()
    assert not at.exception
    assert at.session_state["dot_result"].pairs == 8_000
    assert any("reshape" in m.value for m in at.markdown)
