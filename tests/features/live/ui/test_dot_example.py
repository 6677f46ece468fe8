"""The seed's example at full size, in a fragment: choose the pairs, run, see the result."""

from pmapviz.core.budgets import memorypool
from pmapviz.core.planning import seedpairs
from pmapviz.features.live import dotproduct
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


def test_the_seeds_pairs_and_the_box_are_written_from_the_same_split():
    """The text's pairs are the box's: the seed's on these devices (the largest multiple of
    the count where it does not divide 10,000,000), within the memory budget."""
    at = render(_example, TEST_DEVICES)
    split = seedpairs.split(TEST_DEVICES, dotproduct.DEFAULT_PAIRS)
    assert split.reshape_words() in at.markdown[0].value
    limit = dotproduct.max_pairs(memorypool.budget(), TEST_DEVICES)
    assert at.number_input(key="dot_pairs").value == min(split.used, limit)
    assert at.number_input(key="dot_pairs").value % TEST_DEVICES == 0
