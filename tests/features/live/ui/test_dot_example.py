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


def test_a_run_of_the_same_pairs_is_shared_with_the_next_session_without_its_run(monkeypatch):
    """Issue 65: the example runs once for the room; another session with the same pairs
    sees that run at once, said to be another session's, and its own pairs run its own."""
    calls, real = [], dotproduct._run
    monkeypatch.setattr(dotproduct, "_run", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    first = render(_example, TEST_DEVICES)
    first.number_input(key="dot_pairs").set_value(8_000)
    first.button(key="dot_run").click().run()
    assert calls == [8_000] and any("Your run" in c.value for c in first.caption)
    second = render(_example, TEST_DEVICES)
    assert not any("-> reshape ->" in m.value for m in second.markdown)  # 10M: not run
    second.number_input(key="dot_pairs").set_value(8_000).run()  # the same pairs: no Run
    assert calls == [8_000]
    assert any("Another session's run of these settings, shared" in c.value for c in second.caption)
    assert any("-> reshape -> (8_000,)" in m.value for m in second.markdown)
    second.button(key="dot_run").click().run()  # Run with the same pairs: the shared result
    assert calls == [8_000] and second.session_state["dot_result"].pairs == 8_000
    second.number_input(key="dot_pairs").set_value(8_192)
    second.button(key="dot_run").click().run()
    assert calls == [8_000, 8_192]
